import CFieldcapLinux
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
/// and sets `current_timestamp_clock` to `monotonic_raw` when it can. `run` enables the buffer and
/// waits in `poll` on it and the stop signal; each wake-up reads what the kernel has, decodes it in
/// place and pushes one fixed-size record per sample: no allocation, no lock.
///
/// When the timestamps are in another clock (`realtime` left as it was), each read takes a
/// bracketed clock pair and maps them with a `ClockTracker`, which notices rate changes (NTP) and
/// steps (`date -s`). Samples stamped inside the interval of a rate change wait, in a staging
/// area allocated at start, for the next read's pair, which says on which side of it they lie.
/// Without a timestamp channel, times are extrapolated back from the read: `T − (N−1−i)·period`.
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
    public let device: IIODevice
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
    /// would have had.
    public let timelineGaps = DropCounter()
    public var deviceGaps: DropCounter? { timelineGaps }
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

    private let periodNs: Double
    private let stallTimeoutNs: UInt64
    private let decoders: [IIOChannelDecoder]
    private let selected: [IIODevice.Channel]
    private let timestampChannel: IIODevice.Channel?
    /// The timestamp channel's clock, when it must be mapped into RAW.
    private let mappedClock: clockid_t?
    /// Capture-thread-bound while running.
    private var tracker = ClockTracker()
    private var emitter = SampleEmitter()
    /// What setup changed, put back when capture ends.
    private var restoreSetup = IIOCaptureSetup.Restore()
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
        restoreSetup.undo(device: device)
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
        let startedNs = MonotonicClock.now()

        // Where each channel sits in a scan, as libiio lays it out for the enabled channels.
        let start = iio_buffer_start(buffer)!
        var decoders = self.decoders
        for index in decoders.indices {
            decoders[index].byteOffset = iio_buffer_first(buffer, selected[index].pointer)! - start
        }
        let timestampOffset = timestampChannel.map { iio_buffer_first(buffer, $0.pointer)! - start }

        // Samples the buffer took before now are not part of the recording: those stamped before
        // this moment, in the timestamp channel's own clock, are left out before they are mapped.
        var startedDeviceNs = Int64(startedNs)
        if let mappedClock {
            let pair = ClockPairReader.hostSample(mappedClock, after: Int64(startedNs), burst: 3)
            tracker.add(pair)
            startedDeviceNs = pair.otherNs
        }
        // Samples waiting for the pair after a rate change: at most two reads' worth, allocated
        // here, not per sample.
        let staging = UnsafeMutableBufferPointer<CaptureRecord>.allocate(
            capacity: mappedClock == nil ? 0 : 2 * samplesPerRead)
        var staged = 0
        defer {
            // The stream ends: what still waits takes the bound that covers the change.
            for index in 0..<staged {
                let mapped = tracker.mapNow(staging[index].deviceNs)!
                emitter.emit(
                    staging[index], captureNs: mapped.rawNs, uncertaintyNs: 1_000 + mapped.uncertaintyNs, into: ring)
            }
            staging.deallocate()
            emitter.finish()
        }
        emitter = SampleEmitter(periodNs: periodNs, dropCounter: timelineGaps)
        // The kernel wakes a buffer's pollers at every sample, whatever the watermark. When the
        // samples carry their own timestamps the read time does not matter: wait on the stop
        // signal alone and read what has come every 100 ms, ten wake-ups a second instead of
        // one per sample. Without timestamps, wait on the device (the read time is the time).
        let waitOnDevice = timestampChannel == nil
        // The stop signal's pipe, and the device when it is waited on, registered once: the same
        // wait as a camera's.
        let waitSet = CFieldcapLinux_wait_set_create()
        guard waitSet >= 0 else { throw IIOError.system("epoll_create1", device: label, errno: errno) }
        defer { close(waitSet) }
        let deviceBit: UInt32 = 1
        guard CFieldcapLinux_wait_set_add(waitSet, stop.wakeDescriptor, 2) == 0,
            !waitOnDevice || CFieldcapLinux_wait_set_add(waitSet, fd, deviceBit) == 0
        else { throw IIOError.system("epoll_ctl", device: label, errno: errno) }
        var moreWaiting = false
        var record = CaptureRecord()
        var lastData = MonotonicClock.now()
        let period = periodNs
        while !stop.isRequested {
            if MonotonicClock.now() &- lastData > stallTimeoutNs {
                throw DeviceError.stalled(device: label, timeoutNs: stallTimeoutNs, what: "sample")
            }
            if !moreWaiting {
                var ready: UInt32 = 0
                var failed: UInt32 = 0
                // An interrupted wait goes back to the stall watchdog rather than waiting the
                // whole timeout again: a stream of signals must not hide a stall.
                let waited = CFieldcapLinux_wait_set_wait(waitSet, waitOnDevice ? 200 : 100, &ready, &failed)
                if waited < 0 && errno == EINTR { continue }
                if waited < 0 { throw IIOError.system("epoll_wait", device: label, errno: errno) }
                if stop.isRequested { break }
                if waitOnDevice {
                    if failed & deviceBit != 0 {
                        throw DeviceError(
                            code: .gone, device: label, operation: "poll", errno: ENODEV, hint: DeviceError.goneHint)
                    }
                    if ready & deviceBit == 0 { continue }
                }
            }
            let read = iio_buffer_refill(buffer)
            moreWaiting = false
            if read == -Int(EAGAIN) { continue }
            if read < 0 { throw IIOError.system("read samples", device: label, errno: Int32(-read)) }
            let dequeued = MonotonicClock.now()
            lastData = dequeued

            // A fresh clock pair per read, taken after every sample it maps was stamped. Samples
            // that waited for it go first.
            if let mappedClock {
                // A pair too wide to use (preempted between the reads) is read again.
                var paired = tracker.add(ClockPairReader.hostSample(mappedClock, after: Int64(dequeued), burst: 3))
                for _ in 0..<3 where !paired {
                    paired = tracker.add(
                        ClockPairReader.hostSample(mappedClock, after: Int64(MonotonicClock.now()), burst: 3))
                }
                var sent = 0
                while sent < staged, let mapped = mappedNow(staging[sent].deviceNs) {
                    emitter.emit(
                        staging[sent], captureNs: mapped.rawNs, uncertaintyNs: mapped.uncertaintyNs, into: ring)
                    sent += 1
                }
                if sent > 0 {
                    for index in sent..<staged { staging[index - sent] = staging[index] }
                    staged -= sent
                }
            }
            let first = iio_buffer_start(buffer)!
            let end = iio_buffer_end(buffer)!
            let step = iio_buffer_step(buffer)
            let count = step > 0 ? (end - first) / step : 0
            // A full read may have left more in the kernel's buffer: read again at once.
            moreWaiting = count >= samplesPerRead
            for index in 0..<count {
                let scan = UnsafeRawPointer(first + index * step)
                record.dequeueNs = dequeued
                var slot = 0
                for decoder in decoders {
                    for element in 0..<decoder.format.repeatCount {
                        record.values[slot] = decoder.value(inScan: scan, element: element)
                        slot += 1
                    }
                }
                record.valueCount = Int32(slot)
                samplesRead += 1
                guard let timestampOffset else {
                    record.deviceNs = 0
                    emitter.emit(
                        record, captureNs: Int64(dequeued) - Int64(Double(count - 1 - index) * period),
                        uncertaintyNs: Int64(period), into: ring)
                    continue
                }
                record.deviceNs = scan.loadUnaligned(fromByteOffset: timestampOffset, as: Int64.self)
                if record.deviceNs < startedDeviceNs {
                    samplesBeforeStart += 1
                    continue
                }
                guard mappedClock != nil else {
                    // The kernel stamps in the trigger's interrupt: allow it a microsecond.
                    emitter.emit(record, captureNs: record.deviceNs, uncertaintyNs: 1_000, into: ring)
                    continue
                }
                // Behind a waiting sample, or waiting itself: staged, in order.
                if staged == 0, let mapped = mappedNow(record.deviceNs) {
                    emitter.emit(record, captureNs: mapped.rawNs, uncertaintyNs: mapped.uncertaintyNs, into: ring)
                    continue
                }
                if staged == staging.count {
                    // Two reads without the pair that would place them: send them on with the
                    // bound that covers the change.
                    for waiting in 0..<staged {
                        let mapped = tracker.mapNow(staging[waiting].deviceNs)!
                        emitter.emit(
                            staging[waiting], captureNs: mapped.rawNs, uncertaintyNs: 1_000 + mapped.uncertaintyNs,
                            into: ring)
                    }
                    staged = 0
                }
                staging[staged] = record
                staged += 1
            }
        }
    }

    /// A sample's time mapped into RAW with its bound (a µs for the kernel's stamping), or nil
    /// while it must wait for the next pair. At a step of the clock (`date -s`), a sample in its
    /// interval takes the side that continues the timeline. Capture-thread-bound.
    @inline(__always)
    private func mappedNow(_ deviceNs: Int64) -> ClockTracker.Mapped? {
        switch tracker.map(deviceNs) {
        case .mapped(var mapped)?:
            mapped.uncertaintyNs += 1_000
            return mapped
        case .ambiguous(let before, let after)?:
            let expected = emitter.lastCaptureNs + Int64(periodNs)
            var mapped = abs(before.rawNs - expected) < abs(after.rawNs - expected) ? before : after
            mapped.uncertaintyNs += 1_000
            return mapped
        case .pending?, nil:
            return nil
        }
    }
}

extension String {
    /// `iio:device0` → `iio-device0`: a name configfs and sysfs accept.
    func replacingColon() -> String { String(map { $0 == ":" ? "-" : $0 }) }
}
