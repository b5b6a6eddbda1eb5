import CIIO
import FieldcapCore
import SyncField

#if canImport(Glibc)
import Glibc
#endif

/// An IIO IMU captured through its buffer: every sample decoded into SI units and stamped with
/// its own timestamp channel in `CLOCK_MONOTONIC_RAW`.
///
/// Setup (here, on the caller's thread) picks the channels, attaches a trigger (the one named,
/// the one attached, or an hrtimer trigger made through configfs), sets and reads back the rate,
/// and sets `current_timestamp_clock` to `monotonic_raw` when it can. `run` enables the buffer and
/// waits in `poll` on it and the stop signal; each wake-up reads what the kernel has, decodes it in
/// place and pushes one fixed-size record per sample: no allocation, no lock.
///
/// When the timestamps are in another clock (`realtime` left as it was), each read takes a
/// bracketed clock pair and maps them with `ClockMapping`, which also notices steps (`date -s`).
/// Without a timestamp channel, times are extrapolated back from the read: `T − (N−1−i)·period`.
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

        public init(rate: Double? = nil, channels: [String]? = nil, trigger: String? = nil, keepTimestampClock: Bool = false) {
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
    public let device: IIODevice
    public let grantedRate: Double
    public let trigger: String?
    public let timeSource: TimeSource
    public let valueChannels: [ValueChannel]
    /// Samples missing from the timeline (gaps over 1.5 periods), by the sample numbers they
    /// would have had.
    public let timelineGaps = DropCounter()
    public var deviceGaps: DropCounter? { timelineGaps }
    /// Gaps seen (each may miss several samples).
    public private(set) var gapEvents = 0
    /// Samples whose time was not after the previous one's (moved just past it, counted).
    public private(set) var nonIncreasingTimes = 0
    public private(set) var samplesRead = 0
    /// Setup found the buffer left enabled by a recorder that died, and disabled it.
    public private(set) var reclaimedStaleBuffer = false
    /// Steps of the timestamp clock seen during capture (`date -s`).
    public var clockSteps: Int { mapping.steps }
    public var clockMapping: ClockMapping.Snapshot? { mapping.snapshot }

    private let periodNs: Double
    private let stallTimeoutNs: UInt64
    private let decoders: [IIOChannelDecoder]
    private let selected: [IIODevice.Channel]
    private let timestampChannel: IIODevice.Channel?
    private let mapping = ClockMapping()
    private let clockReader: ClockPairReader?
    /// What setup changed, put back when capture ends.
    private var restoreTrigger: String?
    private var createdTriggerDirectory: String?
    private var restoreClock: String?
    private var restored = false
    private var buffer: OpaquePointer?
    /// Samples one read can take: about a quarter of a second.
    private var samplesPerRead: Int { max(16, min(65_536, Int(grantedRate / 4))) }

    /// Sets the device up for capture. Throws a one-line error naming the device and what to do.
    public init(id: String, device name: String, options: Options = Options()) throws(IIOError) {
        let device = try IIODevice(name)
        self.device = device
        let label = device.id == name || "/dev/\(device.id)" == name ? device.id : "\(name) (\(device.id))"
        guard device.hasBuffer else {
            throw IIOError(code: .unsupported, device: label, operation: "buffered capture",
                           hint: "the device has no buffer (no scan elements): its driver cannot stream samples")
        }
        let scan = device.scanChannels
        // Channels.
        var chosen: [IIODevice.Channel]
        if let wanted = options.channels {
            chosen = []
            for want in wanted {
                let matches = scan.filter { $0.id == want || ($0.kind.rawValue == want && $0.id != "timestamp") }
                guard !matches.isEmpty else {
                    throw IIOError(code: .notFound, device: label, operation: "channel '\(want)'",
                                   hint: "no such channel; it has \(scan.map(\.id).filter { $0 != "timestamp" }.joined(separator: ", "))")
                }
                chosen += matches.filter { match in !chosen.contains { $0.id == match.id } }
            }
        } else {
            chosen = scan.filter { $0.kind.isIMUChannel }
            guard !chosen.isEmpty else {
                throw IIOError(code: .notFound, device: label, operation: "choose channels",
                               hint: "no accel, anglvel, magn or temp channel; pick from \(scan.map(\.id).filter { $0 != "timestamp" }.joined(separator: ", ")) with channels=A+B")
            }
        }
        chosen.sort { $0.index < $1.index }
        for channel in chosen where channel.format == nil {
            throw IIOError(code: .unsupported, device: label, operation: "channel '\(channel.id)'",
                           hint: "its scan format is not one fieldcap decodes (whole bytes of 8 to 64 bits)")
        }
        var values: [ValueChannel] = []
        for channel in chosen {
            let format = channel.format!
            for element in 0..<format.repeatCount {
                values.append(ValueChannel(
                    name: format.repeatCount > 1 ? "\(channel.id)_\(element)" : channel.id, kernelChannel: channel.id,
                    unit: channel.kind.unit, scale: channel.scale, offset: channel.offset, format: format.description))
            }
        }
        guard values.count <= CaptureRecord.valueCapacity else {
            throw IIOError(code: .unsupported, device: label, operation: "choose channels",
                           hint: "\(values.count) values per sample; at most \(CaptureRecord.valueCapacity): choose fewer with channels=A+B")
        }
        selected = chosen
        valueChannels = values
        timestampChannel = scan.first { $0.id == "timestamp" && $0.format?.storageBits == 64 }

        if Sysfs.read("\(device.sysfsPath)/buffer/enable") == "1" {
            // Enabled: either another program is reading it (then its character device, which the
            // kernel lets one process open at a time, is busy) or a recorder died with it enabled
            // (SIGKILL, a crash), which leaves it enabled with nobody reading: take it back.
            let fd = open("/dev/\(device.id)", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                throw errno == EBUSY
                    ? IIOError(code: .busy, device: label, operation: "buffered capture", errno: EBUSY,
                               hint: "its buffer is already enabled: another program is capturing from it")
                    : IIOError.system("open /dev/\(device.id)", device: label, errno: errno)
            }
            close(fd)
            try Sysfs.write("\(device.sysfsPath)/buffer/enable", "0", device: label)
            reclaimedStaleBuffer = true
        }

        // What setup changes is put back if a later step fails (and when capture ends).
        do throws(IIOError) {
            // Trigger, then rate (an hrtimer trigger's rate is the trigger's own).
            var triggerName: String?
            if device.takesTrigger {
                let present = IIODevice.triggers()
                if let wanted = options.trigger {
                    guard present.contains(where: { $0.name == wanted }) else {
                        throw IIOError(code: .notFound, device: label, operation: "trigger '\(wanted)'",
                                       hint: present.isEmpty ? "no triggers are present" : "no such trigger; present: \(present.map(\.name).joined(separator: ", "))")
                    }
                    triggerName = wanted
                } else if let current = device.currentTrigger {
                    triggerName = current
                } else {
                    triggerName = try Self.createHrtimerTrigger(for: device, label: label)
                    createdTriggerDirectory = "/sys/kernel/config/iio/triggers/hrtimer/\(triggerName!)"
                }
                if triggerName != device.currentTrigger {
                    restoreTrigger = device.currentTrigger ?? ""
                    try Sysfs.write("\(device.sysfsPath)/trigger/current_trigger", triggerName!, device: label)
                }
            } else if let wanted = options.trigger {
                throw IIOError(code: .unsupported, device: label, operation: "trigger '\(wanted)'",
                               hint: "this device takes no trigger; drop trigger=")
            }
            trigger = triggerName
            let triggerPath = triggerName.flatMap { name in IIODevice.triggers().first { $0.name == name } }
                .map { "/sys/bus/iio/devices/\($0.id)" }
            let rateAttribute = [triggerPath, device.sysfsPath].compactMap { $0 }
                .map { "\($0)/sampling_frequency" }.first(where: Sysfs.exists)
            if let rate = options.rate {
                guard let rateAttribute else {
                    throw IIOError(code: .unsupported, device: label, operation: "set rate \(rate) Hz",
                                   hint: "neither the device nor its trigger has a sampling_frequency; drop rate=")
                }
                let available = device.samplingFrequenciesAvailable
                if rateAttribute.hasPrefix(device.sysfsPath), !available.isEmpty, !available.contains(where: { abs($0 - rate) < 1e-6 }) {
                    throw IIOError(code: .unsupported, device: label, operation: "set rate \(rate) Hz",
                                   hint: "the device offers \(available.map { "\($0)" }.joined(separator: ", ")) Hz")
                }
                do {
                    try Sysfs.write(rateAttribute, String(rate), device: label)
                } catch where error.errno == EINVAL {
                    throw IIOError(code: .unsupported, device: label, operation: "set rate \(rate) Hz", errno: EINVAL,
                                   hint: "\(rateAttribute) refused it")
                }
            }
            guard let granted = rateAttribute.flatMap(Sysfs.read).flatMap(Double.init), granted > 0 else {
                throw IIOError(code: .unsupported, device: label, operation: "read the sampling rate",
                               hint: "no sampling_frequency to read: give the rate the device runs at with rate=HZ")
            }
            if let rate = options.rate, abs(granted - rate) > 0.01 * rate {
                throw IIOError(code: .unsupported, device: label, operation: "set rate \(rate) Hz",
                               hint: "the device granted \(granted) Hz; ask for that, or a rate it offers")
            }
            grantedRate = options.rate.map { abs(granted - $0) < 1e-9 ? $0 : granted } ?? granted
            periodNs = 1e9 / grantedRate
            stallTimeoutNs = options.stallTimeoutNs ?? max(2_000_000_000, UInt64(20 * periodNs))

            // Timestamps: straight into MONOTONIC_RAW when the device lets us choose its clock.
            if timestampChannel != nil {
                let before = device.timestampClock
                if let before, before != "monotonic_raw", !options.keepTimestampClock {
                    try Sysfs.write("\(device.sysfsPath)/current_timestamp_clock", "monotonic_raw", device: label)
                    restoreClock = before
                }
                let clock = device.timestampClock ?? "realtime"
                guard let clockId = IIODevice.clockId(named: clock) else {
                    throw IIOError(code: .unsupported, device: label, operation: "timestamp clock '\(clock)'",
                                   hint: "not a clock fieldcap can map; drop clock=keep so fieldcap sets monotonic_raw")
                }
                timeSource = clock == "monotonic_raw" ? .kernelRaw : .kernelMapped(clock: clock)
                clockReader = clock == "monotonic_raw" ? nil : ClockPairReader.host(clockId, burst: 3)
            } else {
                timeSource = .extrapolated
                clockReader = nil
            }
        } catch {
            Self.undo(device: device, trigger: restoreTrigger, createdTrigger: createdTriggerDirectory, clock: restoreClock)
            throw error
        }
        var channelDecoders: [IIOChannelDecoder] = []
        for channel in chosen {
            channelDecoders.append(IIOChannelDecoder(
                format: channel.format!, byteOffset: 0, scale: channel.scale, offset: channel.offset,
                factor: channel.kind.factorFromKernelUnit))
        }
        decoders = channelDecoders
        descriptor = StreamDescriptor(
            id: id, kind: .sensor, channels: values.map(\.name), nominalRate: grantedRate, device: name)
        do {
            buffer = try enableBuffer(label: label)
        } catch {
            restore()
            throw error
        }
    }

    deinit { restore() }

    /// Makes an hrtimer trigger through configfs for `device` and returns its name.
    static func createHrtimerTrigger(for device: IIODevice, label: String) throws(IIOError) -> String {
        let root = "/sys/kernel/config/iio/triggers/hrtimer"
        guard Sysfs.exists(root) else {
            throw IIOError(code: .unsupported, device: label, operation: "attach a trigger",
                           hint: "none is attached and hrtimer triggers are unavailable (modprobe iio-trig-hrtimer; mount configfs at /sys/kernel/config); or name one with trigger=NAME")
        }
        let name = "fieldcap-\(device.id.replacingColon())"
        if mkdir("\(root)/\(name)", 0o755) != 0 && errno != EEXIST {
            throw IIOError.system("create hrtimer trigger \(root)/\(name)", device: label, errno: errno)
        }
        // The trigger's sysfs node appears as the directory is made; wait for it briefly.
        for _ in 0..<100 {
            if let trigger = IIODevice.triggers().first(where: { $0.name == name }) {
                // Unprivileged, the trigger's rate becomes ours to write when udev has run the
                // project's rule for the new trigger: wait for that (up to 2 s) rather than fail.
                let rate = "/sys/bus/iio/devices/\(trigger.id)/sampling_frequency"
                for _ in 0..<200 where access(rate, W_OK) != 0 && Sysfs.exists(rate) { usleep(10_000) }
                return name
            }
            usleep(10_000)
        }
        throw IIOError(code: .other, device: label, operation: "create hrtimer trigger \(name)", hint: "it did not appear in sysfs")
    }

    /// Runs `body` with stderr pointed at /dev/null: libiio 0.24 prints its own warnings and
    /// errors there, about states fieldcap expects and reports itself.
    private static func withStderrSilenced<T>(_ body: () -> T) -> T {
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
        Self.undo(device: device, trigger: restoreTrigger, createdTrigger: createdTriggerDirectory, clock: restoreClock)
    }

    private static func undo(device: IIODevice, trigger: String?, createdTrigger: String?, clock: String?) {
        let path = device.sysfsPath
        if let trigger { try? Sysfs.write("\(path)/trigger/current_trigger", trigger.isEmpty ? "\n" : trigger, device: device.id) }
        if let createdTrigger { rmdir(createdTrigger) }
        if let clock { try? Sysfs.write("\(path)/current_timestamp_clock", clock, device: device.id) }
    }

    /// Enables the channels and the buffer. libiio 0.24 prints a warning on stderr when the
    /// driver lacks its high-speed (mmap) interface, which is normal; fieldcap's own output
    /// should be all the user sees, so stderr is silenced for the call (setup runs before any
    /// other thread writes there).
    private func enableBuffer(label: String) throws(IIOError) -> OpaquePointer {
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
        let label = device.label
        let buffer = self.buffer!
        let fd = iio_buffer_get_poll_fd(buffer)
        guard fd >= 0 else { throw IIOError.system("get the buffer's descriptor", device: label, errno: -fd) }
        // Samples the buffer took between setup and now are not part of the recording.
        let startedNs = MonotonicClock.now()

        // Where each channel sits in a scan, as libiio lays it out for the enabled channels.
        let start = iio_buffer_start(buffer)!
        var decoders = self.decoders
        for index in decoders.indices {
            decoders[index].byteOffset = iio_buffer_first(buffer, selected[index].pointer)! - start
        }
        let timestampOffset = timestampChannel.map { iio_buffer_first(buffer, $0.pointer)! - start }

        if let clockReader { mapping.add(clockReader.sample()) }
        // The kernel wakes a buffer's pollers at every sample, whatever the watermark. When the
        // samples carry their own timestamps the read time does not matter: wait on the stop
        // signal alone and read what has come every 100 ms, ten wake-ups a second instead of
        // one per sample. Without timestamps, wait on the device (the read time is the time).
        let waitOnDevice = timestampChannel == nil
        var pollers = [pollfd(fd: stop.wakeDescriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        let watched: nfds_t = waitOnDevice ? 2 : 1
        var moreWaiting = false
        var record = CaptureRecord()
        var sequence: UInt64 = 0
        var lastCapture: UInt64 = 0
        var lastData = MonotonicClock.now()
        let period = periodNs
        while !stop.isRequested {
            if MonotonicClock.now() &- lastData > stallTimeoutNs {
                throw IIOError(code: .stalled, device: label, operation: "capture",
                               hint: "no sample for \(stallTimeoutNs / 1_000_000) ms: the device or its trigger stopped")
            }
            if !moreWaiting {
                let ready = poll(&pollers, watched, waitOnDevice ? 200 : 100)
                if ready < 0 {
                    if errno == EINTR { continue }
                    throw IIOError.system("poll", device: label, errno: errno)
                }
                if stop.isRequested { break }
                if waitOnDevice {
                    if pollers[1].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                        throw IIOError(code: .gone, device: label, operation: "poll", errno: ENODEV, hint: "the device is gone (unplugged?)")
                    }
                    if pollers[1].revents == 0 { continue }
                }
            }
            let read = iio_buffer_refill(buffer)
            moreWaiting = false
            if read == -Int(EAGAIN) { continue }
            if read < 0 { throw IIOError.system("read samples", device: label, errno: Int32(-read)) }
            let dequeued = MonotonicClock.now()
            lastData = dequeued

            // Map the batch: a fresh clock pair per read; after a step of the device's clock the
            // samples stamped before it still carry the old offset, so each takes whichever
            // mapping continues the timeline.
            var snapshot: ClockMapping.Snapshot?
            var beforeStep: ClockMapping.Snapshot?
            if let clockReader {
                let previous = mapping.snapshot
                let stepsBefore = mapping.steps
                mapping.add(clockReader.sample())
                snapshot = mapping.snapshot
                if mapping.steps != stepsBefore { beforeStep = previous }
            }
            let first = iio_buffer_start(buffer)!
            let end = iio_buffer_end(buffer)!
            let step = iio_buffer_step(buffer)
            let count = step > 0 ? (end - first) / step : 0
            // A full read may have left more in the kernel's buffer: read again at once.
            moreWaiting = count >= samplesPerRead
            for index in 0..<count {
                let scan = UnsafeRawPointer(first + index * step)
                var capture: UInt64
                var uncertainty: UInt64
                var deviceNs: Int64 = 0
                if let timestampOffset {
                    deviceNs = scan.loadUnaligned(fromByteOffset: timestampOffset, as: Int64.self)
                    if let snapshot {
                        var mapped = snapshot.toRaw(deviceNs)
                        if let beforeStep {
                            let alternative = beforeStep.toRaw(deviceNs)
                            let expected = Int64(lastCapture) + Int64(period)
                            if abs(alternative - expected) < abs(mapped - expected) { mapped = alternative }
                        }
                        capture = UInt64(max(1, mapped))
                        uncertainty = 1_000 + UInt64(snapshot.uncertaintyNs(at: deviceNs))
                    } else {
                        capture = UInt64(max(1, deviceNs))
                        // The kernel stamps in the trigger's interrupt: allow it a microsecond.
                        uncertainty = 1_000
                    }
                } else {
                    capture = dequeued &- UInt64(Double(count - 1 - index) * period)
                    uncertainty = UInt64(period)
                }
                if capture < startedNs && timestampOffset != nil { continue }
                if lastCapture != 0 {
                    if capture <= lastCapture {
                        capture = lastCapture + 1
                        nonIncreasingTimes += 1
                    } else if Double(capture - lastCapture) > 1.5 * period {
                        let missing = Int((Double(capture - lastCapture) / period).rounded()) - 1
                        if missing > 0 {
                            gapEvents += 1
                            timelineGaps.record(from: sequence, count: min(missing, 1_000_000))
                            sequence += UInt64(missing)
                        }
                    }
                }
                lastCapture = capture
                record.sequence = sequence
                record.dequeueNs = dequeued
                record.captureNs = capture
                record.uncertaintyNs = uncertainty
                record.deviceNs = deviceNs
                var slot = 0
                for decoder in decoders {
                    for element in 0..<decoder.format.repeatCount {
                        record.values[slot] = decoder.value(inScan: scan, element: element)
                        slot += 1
                    }
                }
                record.valueCount = Int32(slot)
                ring.push(record, sequence: sequence)
                sequence += 1
                samplesRead += 1
            }
        }
    }
}

extension String {
    /// `iio:device0` → `iio-device0`: a name configfs and sysfs accept.
    func replacingColon() -> String { String(map { $0 == ":" ? "-" : $0 }) }
}
