// Encodes raw frames from a file with fieldcap's encoders, the recorder's own path
// (`VideoEncoders.make`, the FrameEncoder an encoding worker runs) or the preview's JPEG encoder,
// and reports the CPU time per frame and the bytes, for `Benchmarks/encode-vs-peers` and
// `Benchmarks/preview-load` to set beside FFmpeg and GStreamer on the same frames. With OUT, the
// encoded frames are written there one after another (JPEGs: an MJPEG stream FFmpeg reads) for the
// script to measure their quality.
//
//   EncodeBench FRAMES.raw WIDTH HEIGHT FORMAT ENCODING [OUT]
//     FORMAT: YUYV, NV12, GREY, Y16, Z16; ENCODING: jpeg:QUALITY, ffv1, or preview:QUALITY (the
//     live preview's JPEG: its fast DCT)
import FieldcapCore
import FieldcapEncode
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

func usage() -> Never {
    FileHandle.standardError.write(
        Data("usage: EncodeBench FRAMES.raw WIDTH HEIGHT YUYV|NV12|GREY|Y16|Z16 jpeg:Q|ffv1|preview:Q [OUT]\n".utf8))
    exit(64)
}

let arguments = CommandLine.arguments
guard arguments.count >= 6, let width = Int(arguments[2]), let height = Int(arguments[3]),
    let pixelFormat = VideoFormat.PixelFormat(rawValue: arguments[4]),
    let frameBytes = pixelFormat.frameBytes(width: width, height: height)
else { usage() }
let format = VideoFormat(width: width, height: height, pixelFormat: pixelFormat)
let spec = arguments[5].split(separator: ":").map(String.init)
let encoder: FrameEncoder
switch (spec.first, spec.count > 1 ? Int(spec[1]) : nil) {
case ("ffv1", _): encoder = try VideoEncoders.make(.ffv1, for: format)!
case ("jpeg", let quality?): encoder = try VideoEncoders.make(.jpeg(quality: quality), for: format)!
case ("preview", let quality?): encoder = try JPEGEncoder(format: format, quality: quality)
default: usage()
}
var output: FileHandle?
if arguments.count > 6 {
    guard FileManager.default.createFile(atPath: arguments[6], contents: nil),
        let file = FileHandle(forWritingAtPath: arguments[6])
    else { usage() }
    output = file
}
// One frame at a time into one buffer, as a camera's writer hands them over (and as GStreamer's
// filesrc reads its blocks): the whole file in memory would add its page faults to the CPU.
guard let input = FileHandle(forReadingAtPath: arguments[1]) else { usage() }
let frame = UnsafeMutableRawBufferPointer.allocate(byteCount: frameBytes, alignment: 4096)

func read(_ frame: UnsafeMutableRawBufferPointer, from input: FileHandle) -> Bool {
    var filled = 0
    while filled < frame.count {
        let count = read(input.fileDescriptor, frame.baseAddress! + filled, frame.count - filled)
        if count <= 0 { return false }
        filled += count
    }
    return true
}

func cpuNow() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

var bytes = 0
var frames = 0
var encoded: [Data] = []
let keep = { (coded: EncodedFrame) in
    bytes += coded.bytes.count
    if output != nil { encoded.append(Data(coded.bytes)) }
}
let started = cpuNow()
while read(frame, from: input) {
    try encoder.encode(UnsafeRawBufferPointer(frame), record: CaptureRecord(), emit: keep)
    frames += 1
}
try encoder.drain(emit: keep)
let cpu = cpuNow() - started
for frame in encoded { output?.write(frame) }
print(
    String(
        format: "{\"frames\": %d, \"cpu_s\": %.6f, \"ms_per_frame\": %.4f, \"bytes_per_frame\": %d}", frames, cpu,
        cpu / Double(max(1, frames)) * 1000, bytes / max(1, frames)))
