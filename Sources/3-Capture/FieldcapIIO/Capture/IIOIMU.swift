import CIIO
import FieldcapCore
import FieldcapSystem
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// An IIO IMU captured through its buffer: every sample decoded into SI units and stamped with
/// its own timestamp channel in `CLOCK_MONOTONIC_RAW`.
///
/// Setup (here, on the caller's thread) picks the channels, attaches a trigger (the one named,
/// the one attached, or an hrtimer trigger made through configfs), sets and reads back the rate,
/// and sets `current_timestamp_clock` to `monotonic_raw` when it can. `run` hands the enabled
/// buffer to the capture loop (`IIOReadLoop`): wait in `poll` on it and the stop signal, read what
/// the kernel has, decode it in place and push one fixed-size record per sample.
///
/// With `Options.rejoin`, a device that goes away mid-recording (removed, its driver unbound) is
/// waited for and set up again as it was (`IIOIMU+Rejoin.swift`): the stream goes on under its
/// id, its sequence numbers running on.
///
/// When the timestamps are in another clock (`realtime` left as it was), each read takes a
/// bracketed clock pair and maps them with a `ClockTracker`, which notices rate changes (NTP) and
/// steps (`date -s`). Without a timestamp channel, times are extrapolated back from the read.
///
/// Threading: set up on the caller's thread; then `run` and everything it mutates (the buffer,
/// the clock tracker, the emitter's counters) belong to the capture thread. Counters and the
/// report are read once the capture thread has been joined; `deinit` puts the device back.
public final class IIOIMU: CaptureSource, @unchecked Sendable {
    public struct Options: Sendable {
        /// Samples per second; nil keeps the device's (or trigger's) current rate.
        public var rate: Double?
        /// Kernel channel ids (`accel_x`) or kinds (`accel`); nil: every accel, anglvel, magn
        /// and temp channel.
        public var channels: [String]?
        /// A trigger by name; nil: the attached one, or a new hrtimer trigger.
        public var trigger: String?
        /// Leave `current_timestamp_clock` as it is and map its clock into RAW.
        public var keepTimestampClock = false
        /// No sample for this long ends the stream; nil: 2 s or 20 periods, whichever is longer.
        public var stallTimeoutNs: UInt64?
        /// How to wait for the device after it went away and take it up again; nil: its stream
        /// ends.
        public var rejoin: RejoinPolicy?
        /// The timestamp clock to set whatever `keepTimestampClock` says: the one a device that
        /// came back had before it went.
        var timestampClock: String?

        public init(
            rate: Double? = nil, channels: [String]? = nil, trigger: String? = nil, keepTimestampClock: Bool = false
        ) {
            self.rate = rate
            self.channels = channels
            self.trigger = trigger
            self.keepTimestampClock = keepTimestampClock
        }
    }

    /// Where `capture_ns` comes from.
    public enum TimeSource: Sendable, Equatable {
        /// The sample's timestamp channel, in MONOTONIC_RAW already.
        case kernelRaw
        /// The sample's timestamp channel in `clock`, mapped into RAW.
        case kernelMapped(clock: String)
        /// No timestamp channel: extrapolated back from the read.
        case extrapolated
    }

    /// One value of a sample line, for the sidecar: its name, the kernel channel and the units.
    public struct ValueChannel: Sendable {
        public var name: String
        public var kernelChannel: String
        public var unit: String
        public var scale: Double
        public var offset: Double
        public var format: String
    }

    public let descriptor: StreamDescriptor
    /// The device; replaced when it comes back after it went away (capture thread, between
    /// streams).
    public internal(set) var device: IIODevice
    public let grantedRate: Double
    public let trigger: String?
    /// Whether fieldcap made the trigger (an hrtimer trigger through configfs, removed afterwards).
    public let triggerMade: Bool
    /// Whether the trigger was named (`trigger=`), rather than found attached or made.
    public let triggerAsked: Bool
    /// Whether the channels were named (`channels=`), rather than every IMU channel it has.
    public let channelsAsked: Bool
    /// Whether the rate was asked for (`rate=`), or kept as the device or trigger ran.
    public let rateAsked: Bool
    /// Whether `rate=` named the rate of a device and trigger with none to set (taken as said).
    public let rateDeclared: Bool
    /// Whether fieldcap set the timestamp clock to `monotonic_raw` (put back afterwards).
    public let timestampClockSet: Bool
    public let timeSource: TimeSource
    public let valueChannels: [ValueChannel]
    /// Samples missing from the timeline (gaps over 1.5 periods), by the sample numbers they
    /// would have had; room for the runs of a jittery trigger over a long recording (64 KiB).
    public let timelineGaps = DropCounter(runCapacity: 4096)
    public var deviceGaps: DropCounter? { timelineGaps }
    public var clockHealth: ClockHealthBoard? { clockBoard }
    private let clockBoard: ClockHealthBoard?
    /// Gaps seen (each may miss several samples). Read after capture ended.
    public var gapEvents: Int { emitter.gapEvents }
    /// Samples whose time was not after the previous one's (moved just past it, counted).
    public var nonIncreasingTimes: Int { emitter.nonIncreasingTimes }
    /// Samples read from the device's buffer, `samplesBeforeStart` among them.
    public private(set) var samplesRead = 0
    /// Samples the buffer took before capture started (stamped before it), left out of the
    /// recording.
    public private(set) var samplesBeforeStart = 0
    /// Setup found the buffer left enabled by a recorder that died, and disabled it.
    public let reclaimedStaleBuffer: Bool
    /// The timestamp clock's mapping into RAW, when it has one: rate changes, steps (`date -s`),
    /// the worst bound handed out. Read after capture ended.
    public var clockTracker: ClockTracker? { mappedClock == nil ? nil : tracker }
    let rejoinPolicy: RejoinPolicy?
    /// The times the device was away; nil when it is not taken up again after it went.
    public let presence: StreamPresence?

    private let periodNs: Double
    private let stallTimeoutNs: UInt64
    private let decoders: [IIOChannelDecoder]
    /// The channels and timestamp channel of the device as it is now: libiio's, of its context
    /// (replaced with the device when it comes back).
    var selected: [IIODevice.Channel]
    var timestampChannel: IIODevice.Channel?
    /// The timestamp channel's clock, when it must be mapped into RAW.
    private let mappedClock: clockid_t?
    /// Capture-thread-bound while running.
    private var tracker = ClockTracker()
    private var emitter = SampleEmitter()
    /// What setup changed, put back when capture ends.
    var restoreSetup = IIOCaptureSetup.Restore()
    private var restored = false
    var buffer: OpaquePointer?
    /// Samples one read can take: about a quarter of a second.
    private var samplesPerRead: Int { max(16, min(65_536, Int(grantedRate / 4))) }

    /// Sets the device up for capture. Throws a one-line error naming the device and what to do.
    public init(id: String, device name: String, options: Options = Options()) throws(IIOError) {
        let device = try IIODevice(name)
        self.device = device
        rejoinPolicy = options.rejoin
        presence = options.rejoin == nil ? nil : StreamPresence()
        let label = device.id == name || "/dev/\(device.id)" == name ? device.id : "\(name) (\(device.id))"
        guard device.hasBuffer else {
            throw IIOError(
                code: .unsupported, device: label, operation: "buffered capture",
                hint: "the device has no buffer (no scan elements): its driver cannot stream samples")
        }
        let setup = try IIOCaptureSetup(device: device, label: label, options: options)
        selected = setup.chosen
        valueChannels = setup.values
        timestampChannel = setup.timestampChannel
        reclaimedStaleBuffer = setup.reclaimedStaleBuffer
        trigger = setup.trigger
        triggerMade = setup.triggerMade
        triggerAsked = options.trigger != nil
        channelsAsked = options.channels != nil
        grantedRate = setup.grantedRate
        rateAsked = setup.rateAsked
        rateDeclared = setup.rateDeclared
        timeSource = setup.timeSource
        mappedClock = setup.mappedClock
        clockBoard = setup.mappedClock.map { ClockHealthBoard(clock: $0) }
        restoreSetup = setup.restore
        timestampClockSet = setup.restore.clock != nil
        periodNs = 1e9 / grantedRate
        stallTimeoutNs = options.stallTimeoutNs ?? max(2_000_000_000, UInt64(20 * periodNs))
        var channelDecoders: [IIOChannelDecoder] = []
        for channel in selected {
            channelDecoders.append(
                IIOChannelDecoder(
                    format: channel.format!, byteOffset: 0, scale: channel.scale, offset: channel.offset,
                    factor: channel.kind.factorFromKernelUnit))
        }
        decoders = channelDecoders
        descriptor = StreamDescriptor(
            id: id, kind: .sensor, channels: valueChannels.map(\.name), nominalRate: grantedRate, device: name)
        do {
            buffer = try enableBuffer(label: label)
        } catch {
            restore()
            throw error
        }
    }

    deinit { restore() }

    private static let stderrSilencing = Lock()

    /// Runs `body` with stderr pointed at /dev/null: libiio 0.24 prints its own warnings and
    /// errors there, about states fieldcap expects and reports itself.
    static func withStderrSilenced<T>(_ body: () -> T) -> T {
        // One at a time: two capture threads whose devices went at once would otherwise save
        // each other's /dev/null and leave stderr pointing there for good (seen in the kernel rig:
        // the recording's summary lost).
        stderrSilencing.lock()
        defer { stderrSilencing.unlock() }
        let saved = dup(2)
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        if saved >= 0 && null >= 0 { dup2(null, 2) }
        defer {
            if saved >= 0 && null >= 0 { dup2(saved, 2) }
            if saved >= 0 { close(saved) }
            if null >= 0 { close(null) }
        }
        return body()
    }

    /// Puts back what setup changed: the trigger attached before, a trigger made for us, the
    /// timestamp clock. Idempotent.
    private func restore() {
        guard !restored else { return }
        restored = true
        releaseBuffer()
        restoreSetup.undo(device: device)
    }

    /// Disables and frees the buffer, closing the device's character device: a device that went
    /// away can then be freed by its driver and made again.
    func releaseBuffer() {
        if let buffer {
            // A device that went away cannot have its buffer disabled, and libiio says so on
            // stderr for every channel; the stream's own error already says the device is gone.
            if Sysfs.exists(device.sysfsPath) {
                iio_buffer_destroy(buffer)
            } else {
                Self.withStderrSilenced { iio_buffer_destroy(buffer) }
            }
        }
        buffer = nil
    }

    /// Enables the channels and the buffer. libiio 0.24 prints a warning on stderr when the
    /// driver lacks its high-speed (mmap) interface, which is normal; fieldcap's own output
    /// should be all the user sees, so stderr is silenced for the call (setup runs before any
    /// other thread writes there).
    func enableBuffer(label: String) throws(IIOError) -> OpaquePointer {
        for channel in device.channels where channel.isScanElement { iio_channel_disable(channel.pointer) }
        for channel in selected { iio_channel_enable(channel.pointer) }
        if let timestampChannel { iio_channel_enable(timestampChannel.pointer) }
        // Without a timestamp channel the read time is the time base: wake about 100 times a
        // second at the watermark. Keep about a second in the kernel's buffer (libiio makes it
        // four times the read size) so a slow writer never loses samples there.
        let perWakeup = max(1, Int(grantedRate / 100))
        // The watermark must not exceed the buffer's length, which libiio sets only as it
        // enables the buffer: set that first, to the same value libiio will write.
        try? Sysfs.write("\(device.sysfsPath)/buffer/length", String(4 * samplesPerRead), device: label)
        try? Sysfs.write("\(device.sysfsPath)/buffer/watermark", String(min(perWakeup, samplesPerRead)), device: label)
        var code: Int32 = 0
        let buffer = Self.withStderrSilenced {
            let buffer = iio_device_create_buffer(device.pointer, samplesPerRead, false)
            code = errno
            return buffer
        }
        guard let buffer else { throw IIOError.system("enable the buffer", device: label, errno: code) }
        _ = iio_buffer_set_blocking_mode(buffer, false)
        return buffer
    }

    public func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        defer { restore() }
        var loop = IIOReadLoop(
            label: descriptor.device, decoders: decoders, timestampOffset: nil, mappedClock: mappedClock,
            periodNs: periodNs, stallTimeoutNs: stallTimeoutNs, samplesPerRead: samplesPerRead)
        loop.clockBoard = clockBoard
        defer {
            samplesRead = loop.samplesRead
            samplesBeforeStart = loop.samplesBeforeStart
            tracker = loop.tracker
            emitter = loop.emitter
        }
        var rejoining = RejoinLoop(policy: rejoinPolicy, presence: presence)
        try rejoining.run(
            stream: { try stream(&loop, into: ring, stop: stop) },
            takeUpAgain: { policy, presence in try takeUpAgain(policy, presence: presence, stop: stop) })
    }

    /// Streams from the enabled buffer until a stop, or until it fails.
    private func stream(_ loop: inout IIOReadLoop, into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        let buffer = LibIIOBuffer(self.buffer!)
        let fd = buffer.pollDescriptor
        guard fd >= 0 else {
            throw IIOError.system("get the buffer's descriptor", device: descriptor.device, errno: -fd)
        }
        // Where each channel sits in a scan, as libiio lays it out for the enabled channels.
        let start = iio_buffer_start(buffer.buffer)!
        for index in loop.decoders.indices {
            loop.decoders[index].byteOffset = iio_buffer_first(buffer.buffer, selected[index].pointer)! - start
        }
        loop.timestampOffset = timestampChannel.map { iio_buffer_first(buffer.buffer, $0.pointer)! - start }
        try loop.run(buffer, into: ring, stop: stop, timelineGaps: timelineGaps)
    }
}

extension String {
    /// `iio:device0` → `iio-device0`: a name configfs and sysfs accept.
    func replacingColon() -> String { String(map { $0 == ":" ? "-" : $0 }) }
}
