import Testing

@testable import FieldcapIIO

@Suite("IIO scan decoding")
struct IIOScanFormatTests {
    private func decode(_ bytes: [UInt8], _ format: IIOScanFormat, element: Int = 0) -> Int64 {
        bytes.withUnsafeBytes { format.raw(at: $0.baseAddress!, element: element) }
    }

    @Test("little- and big-endian, signed and unsigned, shifted and masked as the kernel lays them out")
    func rawValues() {
        // le:s16/16>>0: -33
        #expect(
            decode(
                [0xDF, 0xFF], IIOScanFormat(isBigEndian: false, isSigned: true, bits: 16, storageBits: 16, shift: 0))
                == -33)
        // le:u13/16>>0 with junk in the top bits: masked to 13 bits.
        #expect(
            decode(
                [0x07, 0xE0], IIOScanFormat(isBigEndian: false, isSigned: false, bits: 13, storageBits: 16, shift: 0))
                == 7)
        // be:s12/16>>4: a 12-bit left-justified reading of -2 (0xFFE << 4 = 0xFFE0).
        #expect(
            decode([0xFF, 0xE0], IIOScanFormat(isBigEndian: true, isSigned: true, bits: 12, storageBits: 16, shift: 4))
                == -2)
        // le:s24/32>>8, as some magnetometers send it: 0x800000 is the most negative 24-bit value.
        #expect(
            decode(
                [0x00, 0x00, 0x00, 0x80],
                IIOScanFormat(isBigEndian: false, isSigned: true, bits: 24, storageBits: 32, shift: 8)) == -8_388_608)
        // le:u8/8>>0 and le:s64/64>>0 (a timestamp).
        #expect(
            decode([200], IIOScanFormat(isBigEndian: false, isSigned: false, bits: 8, storageBits: 8, shift: 0)) == 200)
        let stamp: Int64 = 1_234_567_890_123_456_789
        let stampBytes = withUnsafeBytes(of: stamp.littleEndian) { Array($0) }
        #expect(
            decode(stampBytes, IIOScanFormat(isBigEndian: false, isSigned: true, bits: 64, storageBits: 64, shift: 0))
                == stamp)
        // be:u32/32>>0
        #expect(
            decode(
                [0x01, 0x02, 0x03, 0x04],
                IIOScanFormat(isBigEndian: true, isSigned: false, bits: 32, storageBits: 32, shift: 0)) == 0x0102_0304)
    }

    @Test("repeated elements (le:s16/16X4>>0) are read one after another")
    func repeated() {
        let format = IIOScanFormat(
            isBigEndian: false, isSigned: true, bits: 16, storageBits: 16, shift: 0, repeatCount: 4)
        let bytes: [UInt8] = [1, 0, 0xFF, 0xFF, 3, 0, 0, 0x80]
        #expect((0..<4).map { decode(bytes, format, element: $0) } == [1, -1, 3, -32768])
        #expect(format.description == "le:s16/16X4>>0")
    }

    @Test("only whole-byte storage holding the value is decodable")
    func decodable() {
        #expect(IIOScanFormat(isBigEndian: false, isSigned: true, bits: 16, storageBits: 16, shift: 0).isDecodable)
        #expect(!IIOScanFormat(isBigEndian: false, isSigned: true, bits: 12, storageBits: 12, shift: 0).isDecodable)
        #expect(!IIOScanFormat(isBigEndian: false, isSigned: true, bits: 12, storageBits: 16, shift: 8).isDecodable)
    }

    @Test("values in SI units: (raw + offset) × scale × the unit factor")
    func siUnits() {
        let s16 = IIOScanFormat(isBigEndian: false, isSigned: true, bits: 16, storageBits: 16, shift: 0)
        let bytes: [UInt8] = [0x58, 0x01]  // 344, the IIO dummy's accel_x
        // The dummy's accel scale is 0.000001344 (m/s² per count): 344 counts = 0.000462336 m/s².
        let accel = IIOChannelDecoder(
            format: s16, byteOffset: 0, scale: 0.000001344, offset: 0, factor: IIOChannelKind.accel.factorFromKernelUnit
        )
        #expect(bytes.withUnsafeBytes { accel.value(inScan: $0.baseAddress!) } == 344 * 0.000001344)
        // Temperature in milli-degrees with an offset: (344 + -10) × 1 × 1e-3 = 0.334 °C.
        let temp = IIOChannelDecoder(
            format: s16, byteOffset: 0, scale: 1, offset: -10, factor: IIOChannelKind.temp.factorFromKernelUnit)
        #expect(abs(bytes.withUnsafeBytes { temp.value(inScan: $0.baseAddress!) } - 0.334) < 1e-12)
        #expect(IIOChannelKind(channelId: "anglvel_z") == .anglvel)
        #expect(IIOChannelKind(channelId: "voltage1-voltage2") == .voltage)
        #expect(IIOChannelKind(channelId: "magn_x").factorFromKernelUnit == 1e-4)  // gauss → tesla
        #expect(IIOChannelKind(channelId: "timestamp") == .other)
    }
}
