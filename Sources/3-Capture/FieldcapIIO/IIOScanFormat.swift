/// How one channel's value sits in a buffered scan, as the kernel describes it in
/// `scan_elements/in_*_type` (`le:s12/16>>4`, `be:u16/16>>0`, `le:s16/16X3>>0`): byte order,
/// sign, the bits that carry data, the bits of storage, the repeat count and the right shift.
public struct IIOScanFormat: Sendable, Equatable, CustomStringConvertible {
    public var isBigEndian: Bool
    public var isSigned: Bool
    /// Bits carrying the value.
    public var bits: Int
    /// Bits of storage per element: 8, 16, 32 or 64.
    public var storageBits: Int
    /// Right shift that brings the value to bit 0.
    public var shift: Int
    /// Elements per channel (quaternions have 4).
    public var repeatCount: Int

    public init(isBigEndian: Bool, isSigned: Bool, bits: Int, storageBits: Int, shift: Int, repeatCount: Int = 1) {
        self.isBigEndian = isBigEndian
        self.isSigned = isSigned
        self.bits = bits
        self.storageBits = storageBits
        self.shift = shift
        self.repeatCount = repeatCount
    }

    /// Whether fieldcap can decode it: whole-byte storage of 8 to 64 bits holding the value.
    public var isDecodable: Bool {
        [8, 16, 32, 64].contains(storageBits) && bits >= 1 && bits <= storageBits && shift >= 0
            && shift + bits <= storageBits && repeatCount >= 1 && repeatCount <= 16
    }

    public var description: String {
        "\(isBigEndian ? "be" : "le"):"
            + "\(isSigned ? "s" : "u")\(bits)/\(storageBits)\(repeatCount > 1 ? "X\(repeatCount)" : "")>>\(shift)"
    }

    /// Bytes one element takes in the scan.
    public var storageBytes: Int { storageBits / 8 }

    /// The raw integer of element `element` at `bytes`: byte order, shift, mask and sign applied.
    @inline(__always)
    public func raw(at bytes: UnsafeRawPointer, element: Int = 0) -> Int64 {
        let address = bytes + element * storageBytes
        var word: UInt64
        switch storageBits {
        case 8: word = UInt64(address.load(as: UInt8.self))
        case 16:
            let value = address.loadUnaligned(as: UInt16.self)
            word = UInt64(isBigEndian ? UInt16(bigEndian: value) : UInt16(littleEndian: value))
        case 32:
            let value = address.loadUnaligned(as: UInt32.self)
            word = UInt64(isBigEndian ? UInt32(bigEndian: value) : UInt32(littleEndian: value))
        default:
            let value = address.loadUnaligned(as: UInt64.self)
            word = isBigEndian ? UInt64(bigEndian: value) : UInt64(littleEndian: value)
        }
        word >>= UInt64(shift)
        if bits < 64 { word &= (UInt64(1) << UInt64(bits)) - 1 }
        if isSigned && bits < 64 && word & (UInt64(1) << UInt64(bits - 1)) != 0 {
            word |= ~((UInt64(1) << UInt64(bits)) - 1)  // sign-extend
        }
        return Int64(bitPattern: word)
    }
}

/// What an IIO channel measures, by its type prefix (`in_accel_x` → accel), the unit fieldcap
/// writes it in, and the factor from the kernel's unit (after scale) to that one.
///
/// The kernel's units are in Documentation/ABI/testing/sysfs-bus-iio; fieldcap writes SI units.
public enum IIOChannelKind: String, Sendable, CaseIterable {
    case accel, anglvel, magn, temp, voltage, current, pressure, humidityrelative, incli, rot, other

    public init(channelId: String) {
        let type = channelId.prefix { $0.isLetter }
        self = IIOChannelKind(rawValue: String(type)) ?? .other
    }

    /// The unit of values fieldcap writes.
    public var unit: String {
        switch self {
        case .accel: "m/s²"
        case .anglvel: "rad/s"
        case .magn: "T"
        case .temp: "°C"
        case .voltage: "V"
        case .current: "A"
        case .pressure: "Pa"
        case .humidityrelative: "%"
        case .incli: "°"
        case .rot, .other: "(the kernel's unit)"
        }
    }

    /// Kernel unit (after scale) → `unit`: gauss → tesla, milli-degrees → degrees, mV → V,
    /// mA → A, kPa → Pa, milli-percent → percent.
    public var factorFromKernelUnit: Double {
        switch self {
        case .accel, .anglvel, .incli, .rot, .other: 1
        case .magn: 1e-4
        case .temp, .voltage, .current, .humidityrelative: 1e-3
        case .pressure: 1e3
        }
    }

    /// The kinds recorded when no `channels=` list is given: what an IMU is for.
    public var isIMUChannel: Bool { self == .accel || self == .anglvel || self == .magn || self == .temp }
}

/// One channel as fieldcap decodes it: where it sits in a scan and how its raw value becomes
/// a number in SI units: `(raw + offset) × scale × factor`.
public struct IIOChannelDecoder: Sendable, Equatable {
    public var format: IIOScanFormat
    /// Byte offset of the channel in a scan.
    public var byteOffset: Int
    public var scale: Double
    public var offset: Double
    public var factor: Double

    public init(format: IIOScanFormat, byteOffset: Int, scale: Double, offset: Double, factor: Double) {
        self.format = format
        self.byteOffset = byteOffset
        self.scale = scale
        self.offset = offset
        self.factor = factor
    }

    @inline(__always)
    public func value(inScan scan: UnsafeRawPointer, element: Int = 0) -> Double {
        (Double(format.raw(at: scan + byteOffset, element: element)) + offset) * scale * factor
    }
}
