/// H.264 and HEVC from a hardware encoder (Annex B, start codes) as Matroska stores them
/// (`V_MPEG4/ISO/AVC`, `V_MPEGH/ISO/HEVC`): each NAL unit after its length in 4 bytes, the
/// parameter sets of the first frame as the track's CodecPrivate (avcC, hvcC: ISO/IEC 14496-15).
/// A keyframe is a frame with an IDR (H.264) or IRAP (HEVC) picture, as read from the stream.
/// Parameter sets repeated in the stream stay in it, so a file cut anywhere decodes from its next
/// keyframe with what that keyframe carries.
///
/// Thread-bound: the encoding worker's.
public final class AVCFraming: CodedFraming {
    public enum Codec: Sendable { case h264, hevc }

    public let codec: Codec
    public private(set) var codecPrivate: [UInt8]?
    private var output: UnsafeMutableRawPointer
    private var capacity: Int

    public init(_ codec: Codec, capacity: Int = 1 << 20) {
        self.codec = codec
        self.capacity = max(capacity, 4096)
        output = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 64)
    }

    deinit { output.deallocate() }

    /// A NAL unit's type.
    private func type(_ stream: UnsafeRawBufferPointer, _ unit: Range<Int>) -> UInt8 {
        codec == .h264 ? stream[unit.lowerBound] & 0x1F : (stream[unit.lowerBound] >> 1) & 0x3F
    }

    private func isPicture(_ type: UInt8) -> Bool { codec == .h264 ? (1...5).contains(type) : type < 32 }
    private func isKeyframe(_ type: UInt8) -> Bool { codec == .h264 ? type == 5 : (16...23).contains(type) }

    public func frame(_ buffer: UnsafeRawBufferPointer, keyframe: Bool) throws -> EncodedBytes? {
        let units = AnnexB.units(buffer)
        let needed = units.reduce(0) { $0 + 4 + $1.count }
        if needed > capacity {
            output.deallocate()
            capacity = needed * 2
            output = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 64)
        }
        var parameterSets: [UInt8: [[UInt8]]] = [:]
        var picture = false
        var keyframe = false
        var written = 0
        for unit in units {
            let type = type(buffer, unit)
            if isPicture(type) { picture = true }
            if isKeyframe(type) { keyframe = true }
            if codecPrivate == nil, parameterSetTypes.contains(type) {
                parameterSets[type, default: []].append(Array(buffer[unit]))
            }
            let length = UInt32(unit.count).bigEndian
            withUnsafeBytes(of: length) { (output + written).copyMemory(from: $0.baseAddress!, byteCount: 4) }
            (output + written + 4).copyMemory(from: buffer.baseAddress! + unit.lowerBound, byteCount: unit.count)
            written += 4 + unit.count
        }
        if codecPrivate == nil, parameterSetTypes.allSatisfy({ parameterSets[$0] != nil }) {
            codecPrivate = try codec == .h264 ? Self.avcC(parameterSets) : Self.hvcC(parameterSets)
        }
        guard picture else { return nil }
        guard codecPrivate != nil else {
            throw BitstreamError("the encoder's first picture came without its parameter sets, which the track needs")
        }
        return EncodedBytes(bytes: UnsafeRawBufferPointer(start: output, count: written), isKeyframe: keyframe)
    }

    /// SPS and PPS (H.264); VPS, SPS and PPS (HEVC).
    private var parameterSetTypes: [UInt8] { codec == .h264 ? [7, 8] : [32, 33, 34] }

    /// AVCDecoderConfigurationRecord: profile, compatibility and level from the first SPS,
    /// 4-byte lengths, then the SPSs and PPSs.
    static func avcC(_ sets: [UInt8: [[UInt8]]]) throws(BitstreamError) -> [UInt8] {
        let sps = sets[7] ?? [], pps = sets[8] ?? []
        guard let first = sps.first, first.count >= 4 else { throw BitstreamError("an H.264 SPS too short") }
        var record: [UInt8] = [1, first[1], first[2], first[3], 0xFC | 3, 0xE0 | UInt8(sps.count)]
        for unit in sps { record += length16(unit) + unit }
        record.append(UInt8(pps.count))
        for unit in pps { record += length16(unit) + unit }
        return record
    }

    /// HEVCDecoderConfigurationRecord: the general profile, tier and level, chroma format and
    /// bit depths from the first SPS, 4-byte lengths, then arrays of VPS, SPS and PPS.
    static func hvcC(_ sets: [UInt8: [[UInt8]]]) throws(BitstreamError) -> [UInt8] {
        guard let sps = sets[33]?.first, sps.count > 2 else { throw BitstreamError("an HEVC SPS too short") }
        var reader = BitReader(AnnexB.rbsp(sps.dropFirst(2)))
        _ = try reader.bits(4)  // sps_video_parameter_set_id
        let subLayers = Int(try reader.bits(3))  // sps_max_sub_layers_minus1
        let nested = try reader.bit()
        var general: [UInt8] = []
        for _ in 0..<12 { general.append(UInt8(try reader.bits(8))) }
        var profilePresent: [Bool] = [], levelPresent: [Bool] = []
        for _ in 0..<subLayers {
            profilePresent.append(try reader.bit() == 1)
            levelPresent.append(try reader.bit() == 1)
        }
        if subLayers > 0 { for _ in subLayers..<8 { _ = try reader.bits(2) } }
        for layer in 0..<subLayers {
            if profilePresent[layer] { for _ in 0..<11 { _ = try reader.bits(8) } }
            if levelPresent[layer] { _ = try reader.bits(8) }
        }
        _ = try reader.unsignedExpGolomb()  // sps_seq_parameter_set_id
        let chroma = try reader.unsignedExpGolomb()
        if chroma == 3 { _ = try reader.bit() }
        _ = try reader.unsignedExpGolomb()  // width
        _ = try reader.unsignedExpGolomb()  // height
        if try reader.bit() == 1 { for _ in 0..<4 { _ = try reader.unsignedExpGolomb() } }
        let lumaDepth = try reader.unsignedExpGolomb(), chromaDepth = try reader.unsignedExpGolomb()
        var record: [UInt8] = [1] + general
        record += [
            0xF0, 0x00, 0xFC, 0xFC | UInt8(chroma & 3), 0xF8 | UInt8(lumaDepth & 7), 0xF8 | UInt8(chromaDepth & 7),
        ]
        record += [0, 0, UInt8(subLayers + 1) << 3 | UInt8(nested) << 2 | 3, 3]
        for type: UInt8 in [32, 33, 34] {
            let units = sets[type] ?? []
            record += [0x80 | type, 0, UInt8(units.count)]
            for unit in units { record += length16(unit) + unit }
        }
        return record
    }

    private static func length16(_ unit: [UInt8]) -> [UInt8] { [UInt8(unit.count >> 8), UInt8(unit.count & 0xFF)] }
}
