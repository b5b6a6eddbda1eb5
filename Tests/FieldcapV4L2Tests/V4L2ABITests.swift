import CV4L2
import Testing

@testable import FieldcapV4L2

/// The kernel ABI as Swift imports it, pinned without a device: if the headers or the importer
/// ever lay a struct out otherwise, every ioctl would hand the kernel the wrong bytes.
@Suite("V4L2 ABI")
struct V4L2ABITests {
    /// `_IOC(dir, 'V', nr, size)` as the kernel's `asm-generic/ioctl.h` encodes it.
    static func request(_ direction: UInt, _ number: UInt, size: Int) -> UInt {
        direction << 30 | UInt(size) << 16 | UInt(Character("V").asciiValue!) << 8 | number
    }
    static let read: UInt = 2, write: UInt = 1, readWrite: UInt = 3

    #if arch(x86_64) || arch(arm64)
        @Test("struct sizes on 64-bit Linux are the kernel's (v4l2_buffer 88 bytes with a 16-byte timeval)")
        func structSizes() {
            #expect(MemoryLayout<v4l2_capability>.size == 104)
            #expect(MemoryLayout<v4l2_format>.size == 208)
            #expect(MemoryLayout<v4l2_buffer>.size == 88)
            #expect(MemoryLayout<v4l2_requestbuffers>.size == 20)
            #expect(MemoryLayout<v4l2_streamparm>.size == 204)
            #expect(MemoryLayout<v4l2_fmtdesc>.size == 64)
            #expect(MemoryLayout<v4l2_frmsizeenum>.size == 44)
            #expect(MemoryLayout<v4l2_frmivalenum>.size == 52)
            #expect(MemoryLayout<v4l2_queryctrl>.size == 68)
            #expect(MemoryLayout<v4l2_control>.size == 8)
        }

        @Test("the fields the capture loop reads sit at the kernel's offsets")
        func bufferOffsets() {
            #expect(MemoryLayout<v4l2_buffer>.offset(of: \.index) == 0)
            #expect(MemoryLayout<v4l2_buffer>.offset(of: \.bytesused) == 8)
            #expect(MemoryLayout<v4l2_buffer>.offset(of: \.flags) == 12)
            #expect(MemoryLayout<v4l2_buffer>.offset(of: \.timestamp) == 24)
            #expect(MemoryLayout<v4l2_buffer>.offset(of: \.sequence) == 56)
            #expect(MemoryLayout<v4l2_buffer>.offset(of: \.memory) == 60)
            #expect(MemoryLayout<v4l2_buffer>.offset(of: \.m) == 64)
            #expect(MemoryLayout<v4l2_buffer>.offset(of: \.length) == 72)
            #expect(MemoryLayout<v4l2_format>.offset(of: \.fmt) == 8)
            #expect(MemoryLayout<v4l2_capability>.offset(of: \.capabilities) == 84)
            #expect(MemoryLayout<v4l2_capability>.offset(of: \.device_caps) == 88)
            #expect(MemoryLayout<v4l2_streamparm>.offset(of: \.parm) == 4)
        }

        @Test("ioctl numbers, as pinned for 64-bit Linux")
        func pinnedRequests() {
            #expect(CV4L2_VIDIOC_QUERYCAP() == 0x8068_5600)
            #expect(CV4L2_VIDIOC_S_FMT() == 0xC0D0_5605)
            #expect(CV4L2_VIDIOC_QBUF() == 0xC058_560F)
            #expect(CV4L2_VIDIOC_DQBUF() == 0xC058_5611)
            #expect(CV4L2_VIDIOC_S_PARM() == 0xC0CC_5616)
        }
    #endif

    @Test("every ioctl number the shim gives encodes the size of the struct Swift passes with it")
    func requestsMatchStructs() {
        let (r, w, rw) = (Self.read, Self.write, Self.readWrite)
        let expected: [(String, UInt, UInt)] = [
            ("VIDIOC_QUERYCAP", CV4L2_VIDIOC_QUERYCAP(), Self.request(r, 0, size: MemoryLayout<v4l2_capability>.size)),
            ("VIDIOC_ENUM_FMT", CV4L2_VIDIOC_ENUM_FMT(), Self.request(rw, 2, size: MemoryLayout<v4l2_fmtdesc>.size)),
            ("VIDIOC_S_FMT", CV4L2_VIDIOC_S_FMT(), Self.request(rw, 5, size: MemoryLayout<v4l2_format>.size)),
            (
                "VIDIOC_REQBUFS", CV4L2_VIDIOC_REQBUFS(),
                Self.request(rw, 8, size: MemoryLayout<v4l2_requestbuffers>.size)
            ),
            ("VIDIOC_QUERYBUF", CV4L2_VIDIOC_QUERYBUF(), Self.request(rw, 9, size: MemoryLayout<v4l2_buffer>.size)),
            ("VIDIOC_QBUF", CV4L2_VIDIOC_QBUF(), Self.request(rw, 15, size: MemoryLayout<v4l2_buffer>.size)),
            ("VIDIOC_DQBUF", CV4L2_VIDIOC_DQBUF(), Self.request(rw, 17, size: MemoryLayout<v4l2_buffer>.size)),
            ("VIDIOC_STREAMON", CV4L2_VIDIOC_STREAMON(), Self.request(w, 18, size: MemoryLayout<Int32>.size)),
            ("VIDIOC_STREAMOFF", CV4L2_VIDIOC_STREAMOFF(), Self.request(w, 19, size: MemoryLayout<Int32>.size)),
            ("VIDIOC_G_PARM", CV4L2_VIDIOC_G_PARM(), Self.request(rw, 21, size: MemoryLayout<v4l2_streamparm>.size)),
            ("VIDIOC_S_PARM", CV4L2_VIDIOC_S_PARM(), Self.request(rw, 22, size: MemoryLayout<v4l2_streamparm>.size)),
            ("VIDIOC_G_CTRL", CV4L2_VIDIOC_G_CTRL(), Self.request(rw, 27, size: MemoryLayout<v4l2_control>.size)),
            ("VIDIOC_S_CTRL", CV4L2_VIDIOC_S_CTRL(), Self.request(rw, 28, size: MemoryLayout<v4l2_control>.size)),
            (
                "VIDIOC_QUERYCTRL", CV4L2_VIDIOC_QUERYCTRL(),
                Self.request(rw, 36, size: MemoryLayout<v4l2_queryctrl>.size)
            ),
            (
                "VIDIOC_ENUM_FRAMESIZES", CV4L2_VIDIOC_ENUM_FRAMESIZES(),
                Self.request(rw, 74, size: MemoryLayout<v4l2_frmsizeenum>.size)
            ),
            (
                "VIDIOC_ENUM_FRAMEINTERVALS", CV4L2_VIDIOC_ENUM_FRAMEINTERVALS(),
                Self.request(rw, 75, size: MemoryLayout<v4l2_frmivalenum>.size)
            ),
        ]
        for (name, shim, encoded) in expected {
            #expect(
                shim == encoded,
                """
                \(name): the shim gives 0x\(String(shim, radix: 16)), \
                Swift's struct encodes 0x\(String(encoded, radix: 16))
                """)
        }
    }

    @Test("the buffer flags fieldcap tests are the kernel's")
    func flags() {
        #expect(UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) == 0xE000)
        #expect(UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC) == 0x2000)
        #expect(UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_SOE) == 0x1_0000)
        #expect(UInt32(V4L2_BUF_FLAG_ERROR) == 0x40)
        #expect(UInt32(V4L2_CAP_DEVICE_CAPS) == 0x8000_0000)
    }

    @Test("a pixel format's fourcc is its name in little-endian bytes, and reads back")
    func fourcc() {
        #expect(V4L2Device.fourcc(.yuyv) == 0x5659_5559)  // V4L2_PIX_FMT_YUYV
        #expect(V4L2Device.fourcc(.mjpeg) == 0x4750_4A4D)  // V4L2_PIX_FMT_MJPEG
        #expect(V4L2Device.fourcc(.grey) == 0x5945_5247)  // V4L2_PIX_FMT_GREY
        #expect(V4L2Device.fourcc(.y16) == 0x2036_3159)  // V4L2_PIX_FMT_Y16
        #expect(V4L2Device.fourcc(.z16) == 0x2036_315A)  // V4L2_PIX_FMT_Z16, a UVC depth camera's
        #expect(V4L2Device.fourcc(0x2036_315A) == "Z16")
        #expect(V4L2Device.fourcc(0x5659_5559) == "YUYV")
        #expect(V4L2Device.fourcc(0x8000_0000 | 0x2036_3159) == "Y16-BE")
    }
}
