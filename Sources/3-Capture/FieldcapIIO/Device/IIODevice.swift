import CIIO
import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// An IIO device found through libiio's local context: its channels, trigger, rate and
/// timestamp clock. The sysfs attributes that libiio 0.24 does not wrap (trigger, watermark,
/// timestamp clock) are read and written directly.
///
/// Threading: not thread-safe. It holds libiio's context and device pointers, which libiio does
/// not lock: set it up on one thread, then hand it to the capture thread, one owner at a time.
public final class IIODevice: @unchecked Sendable {
    /// One channel of the device, as `fieldcap list` and the channel selection see it.
    ///
    /// Threading: its `pointer` is libiio's channel, owned by the device's context; used only by
    /// the device's owner.
    public struct Channel: @unchecked Sendable {
        /// The kernel's channel id: `accel_x`, `anglvel_z`, `temp`, `voltage0`, `timestamp`.
        public var id: String
        public var kind: IIOChannelKind
        /// Whether it can be captured in a buffer (it has a scan element).
        public var isScanElement: Bool
        public var isOutput: Bool
        /// Its position in a scan (scan elements only).
        public var index: Int
        public var format: IIOScanFormat?
        /// `in_*_scale` and `in_*_offset` (1 and 0 when the device has none).
        public var scale: Double
        public var offset: Double
        let pointer: OpaquePointer
    }

    let context: OpaquePointer
    let pointer: OpaquePointer
    /// `iio:deviceN`.
    public let id: String
    /// The driver's name for it (`bmi160`, `dummy0`).
    public let name: String
    /// How the user named it, for messages.
    public let label: String
    public let channels: [Channel]

    /// Opens the local IIO context and finds `device`: `iio:deviceN`, `/dev/iio:deviceN` or the
    /// device's name.
    public init(_ device: String) throws(IIOError) {
        label = device
        guard let context = iio_create_local_context() else {
            let code = errno
            throw IIOError(
                code: code == ENOENT ? .notFound : .other, device: device, operation: "open the local IIO context",
                errno: code, hint: code == ENOENT ? "this kernel has no IIO devices (/sys/bus/iio is missing)" : "")
        }
        self.context = context
        let wanted = device.hasPrefix("/dev/") ? String(device.dropFirst(5)) : device
        guard let found = iio_context_find_device(context, wanted), !iio_device_is_trigger(found) else {
            let present = Self.names(in: context).map { "\($0.id) (\($0.name))" }
            iio_context_destroy(context)
            throw IIOError(
                code: .notFound, device: device, operation: "find the IIO device",
                hint: present.isEmpty
                    ? "no IIO devices are present" : "no such device; present: \(present.joined(separator: ", "))")
        }
        pointer = found
        id = String(cString: iio_device_get_id(found))
        name = iio_device_get_name(found).map { String(cString: $0) } ?? id
        var channels: [Channel] = []
        for index in 0..<iio_device_get_channels_count(found) {
            guard let channel = iio_device_get_channel(found, index) else { continue }
            let channelId = String(cString: iio_channel_get_id(channel))
            var format: IIOScanFormat?
            if iio_channel_is_scan_element(channel), let data = iio_channel_get_data_format(channel) {
                let candidate = IIOScanFormat(
                    isBigEndian: data.pointee.is_be, isSigned: data.pointee.is_signed, bits: Int(data.pointee.bits),
                    storageBits: Int(data.pointee.length), shift: Int(data.pointee.shift),
                    repeatCount: Int(max(1, data.pointee.repeat)))
                format = candidate.isDecodable ? candidate : nil
            }
            var scale = 1.0
            var offset = 0.0
            if iio_channel_find_attr(channel, "scale") != nil {
                _ = iio_channel_attr_read_double(channel, "scale", &scale)
            }
            if iio_channel_find_attr(channel, "offset") != nil {
                _ = iio_channel_attr_read_double(channel, "offset", &offset)
            }
            channels.append(
                Channel(
                    id: channelId, kind: IIOChannelKind(channelId: channelId),
                    isScanElement: iio_channel_is_scan_element(channel),
                    isOutput: iio_channel_is_output(channel), index: Int(iio_channel_get_index(channel)),
                    format: format,
                    scale: scale, offset: offset, pointer: channel))
        }
        self.channels = channels
    }

    deinit { iio_context_destroy(context) }

    /// Every non-trigger IIO device of the local context, with its name.
    static func names(in context: OpaquePointer) -> [(id: String, name: String)] {
        (0..<iio_context_get_devices_count(context)).compactMap { index in
            guard let device = iio_context_get_device(context, index), !iio_device_is_trigger(device) else {
                return nil
            }
            let id = String(cString: iio_device_get_id(device))
            return (id, iio_device_get_name(device).map { String(cString: $0) } ?? id)
        }
    }

    /// The triggers present (`trigger0` ids with their names), read fresh from sysfs.
    public static func triggers() -> [(id: String, name: String)] {
        Sysfs.list("/sys/bus/iio/devices").filter { $0.hasPrefix("trigger") }.sorted().compactMap { id in
            Sysfs.read("/sys/bus/iio/devices/\(id)/name").map { (id, $0) }
        }
    }

    /// Every IIO device (not trigger) present: `iio:deviceN` and name.
    public static func all() -> [(id: String, name: String)] {
        guard let context = iio_create_local_context() else { return [] }
        defer { iio_context_destroy(context) }
        return names(in: context)
    }

    public var sysfsPath: String { "/sys/bus/iio/devices/\(id)" }

    /// Input channels that can go into a buffer (the timestamp among them).
    public var scanChannels: [Channel] { channels.filter { $0.isScanElement && !$0.isOutput } }

    /// Whether the device supports buffered capture.
    public var hasBuffer: Bool { Sysfs.exists("\(sysfsPath)/buffer/enable") && !scanChannels.isEmpty }

    /// Whether the device takes a trigger (it has a `trigger/current_trigger` attribute).
    public var takesTrigger: Bool { Sysfs.exists("\(sysfsPath)/trigger/current_trigger") }

    /// The name of the trigger attached now, or nil.
    public var currentTrigger: String? {
        Sysfs.read("\(sysfsPath)/trigger/current_trigger").flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The device's own `sampling_frequency` and the choices it lists.
    public var samplingFrequency: Double? { Sysfs.read("\(sysfsPath)/sampling_frequency").flatMap(Double.init) }
    public var samplingFrequenciesAvailable: [Double] {
        Sysfs.read("\(sysfsPath)/sampling_frequency_available")?.split(separator: " ").compactMap { Double($0) } ?? []
    }

    /// `current_timestamp_clock` (`realtime`, `monotonic_raw`...), nil when the device has none.
    public var timestampClock: String? { Sysfs.read("\(sysfsPath)/current_timestamp_clock") }

    /// The clock id of an IIO timestamp clock name.
    public static func clockId(named name: String) -> clockid_t? {
        switch name {
        case "realtime": CLOCK_REALTIME
        case "monotonic": CLOCK_MONOTONIC
        case "monotonic_raw": CLOCK_MONOTONIC_RAW
        case "realtime_coarse": CLOCK_REALTIME_COARSE
        case "monotonic_coarse": CLOCK_MONOTONIC_COARSE
        case "boottime": CLOCK_BOOTTIME
        case "tai": CLOCK_TAI
        default: nil
        }
    }
}

/// Reading and writing sysfs and configfs attributes, errors carrying the path and errno.
enum Sysfs {
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The attribute's text without its trailing newline, or nil when it cannot be read.
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = SystemCall.retryingInterrupts {
            buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        }
        guard count >= 0 else { return nil }
        var text = String(decoding: buffer[0..<count], as: UTF8.self)
        while text.last == "\n" { text.removeLast() }
        return text
    }

    /// Writes `value` to the attribute; the kernel's refusal comes back as the errno.
    static func write(_ path: String, _ value: String, device: String) throws(IIOError) {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw IIOError.system("open \(path)", device: device, errno: errno) }
        defer { close(fd) }
        let bytes = Array(value.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if written < 0 { throw IIOError.system("write '\(value)' to \(path)", device: device, errno: errno) }
    }

    static func list(_ directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
