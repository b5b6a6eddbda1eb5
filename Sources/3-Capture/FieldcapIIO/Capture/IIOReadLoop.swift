import FieldcapCore
import FieldcapSystem
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// The capture loop of an IIO IMU, apart from libiio: wait, read what the kernel has, decode each
/// scan in place, stamp it and push one fixed-size record per sample; no allocation, no lock.
/// `IIOIMU` sets the device up and hands it the enabled buffer; tests hand it a script.
///
/// Each sample's time is its timestamp channel's (`timestampOffset`): in MONOTONIC_RAW already, or
/// in `mappedClock`, mapped through a `ClockTracker` with a bracketed clock pair per read. Samples
/// stamped inside the interval of a rate change wait, in a staging area allocated at start, for
/// the next read's pair, which says on which side of it they lie. Without a timestamp channel,
/// times are extrapolated back from the read: `T − (N−1−i)·period`.
///
/// Capture-thread-bound.
struct IIOReadLoop {
    /// The device as errors name it.
    let label: String
    /// Each selected channel's decoder, at its offset in a scan (set again for a device that
    /// came back: libiio lays out its new buffer).
    var decoders: [IIOChannelDecoder]
    /// Where the timestamp channel sits in a scan; nil when there is none.
    var timestampOffset: Int?
    /// The timestamp channel's clock, when it must be mapped into RAW.
    let mappedClock: clockid_t?
    let periodNs: Double
    /// No sample for this long ends the stream.
    let stallTimeoutNs: UInt64
    /// Scans one read takes at most: a full read is followed by another at once.
    let samplesPerRead: Int
    /// Reads at the stop, at most: what the buffer held, if it holds more than a read's worth.
    static let readsAtStop = 8

    var tracker = ClockTracker()
    /// Where live viewers read the mapping's state (`mappedClock` only).
    var clockBoard: ClockHealthBoard?
    var emitter = SampleEmitter()
    /// Samples read from the buffer, `samplesBeforeStart` among them.
    private(set) var samplesRead = 0
    /// Samples the buffer took before capture started, left out of the recording.
    private(set) var samplesBeforeStart = 0
    /// Times `run` has streamed: after the first, the device came back after an unplug.
    private(set) var streams = 0

    init(
        label: String, decoders: [IIOChannelDecoder], timestampOffset: Int?, mappedClock: clockid_t?,
        periodNs: Double, stallTimeoutNs: UInt64, samplesPerRead: Int
    ) {
        self.label = label
        self.decoders = decoders
        self.timestampOffset = timestampOffset
        self.mappedClock = mappedClock
        self.periodNs = periodNs
        self.stallTimeoutNs = stallTimeoutNs
        self.samplesPerRead = samplesPerRead
    }

    /// Reads `buffer` into `ring` until `stop`, a stall or a failure (thrown). `timelineGaps`
    /// counts the samples missing from the timeline. Run again with a device that came back, the
    /// sequence numbers and counters run on and the timeline starts again (the time away is no
    /// gap).
    mutating func run(
        _ buffer: some IIOBufferCalls, into ring: SPSCRing<CaptureRecord>, stop: StopSignal,
        timelineGaps: DropCounter
    ) throws {
        let startedNs = MonotonicClock.now()
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
        if streams == 0 {
            emitter = SampleEmitter(periodNs: periodNs, dropCounter: timelineGaps)
        } else {
            emitter.startTimeline()
        }
        streams += 1
        // The kernel wakes a buffer's pollers at every sample, whatever the watermark. When the
        // samples carry their own timestamps the read time does not matter: wait on the stop
        // signal alone and read what has come every 100 ms, ten wake-ups a second instead of
        // one per sample. Without timestamps, wait on the device (the read time is the time).
        let waitOnDevice = timestampOffset == nil
        let deviceDescriptor = buffer.pollDescriptor
        var moreWaiting = false
        var record = CaptureRecord()
        var lastData = MonotonicClock.now()
        let period = periodNs
        // At a stop, what the kernel's buffer holds is read before the loop ends (samples made
        // since the last read, up to a read interval's worth): a few reads at most, never a wait.
        var stopping = false
        var lastReads = 0
        while true {
            if !stopping && stop.isRequested { stopping = true }
            if stopping {
                lastReads += 1
                if lastReads > Self.readsAtStop { break }
            } else if MonotonicClock.now() &- lastData > stallTimeoutNs {
                throw DeviceError.stalled(device: label, timeoutNs: stallTimeoutNs, what: "sample")
            }
            if !moreWaiting && !stopping {
                // poll(2) on the stop signal's pipe and, when waited on, the device: a stop wakes
                // the wait at once, and a device that went away answers POLLERR or POLLHUP.
                // An interrupted wait goes back to the stall watchdog rather than waiting the
                // whole timeout again: a stream of signals must not hide a stall.
                let (waited, deviceEvents) = withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) {
                    descriptors in
                    descriptors[0] = pollfd(fd: stop.wakeDescriptor, events: Int16(POLLIN), revents: 0)
                    descriptors[1] = pollfd(fd: deviceDescriptor, events: Int16(POLLIN), revents: 0)
                    let waited = buffer.poll(
                        descriptors.baseAddress!, count: waitOnDevice ? 2 : 1, timeoutMs: waitOnDevice ? 200 : 100)
                    return (waited, descriptors[1].revents)
                }
                if waited < 0 && errno == EINTR { continue }
                if waited < 0 { throw IIOError.system("poll", device: label, errno: errno) }
                if stop.isRequested {
                    // The stop: on to the last reads.
                    stopping = true
                    lastReads = 1
                } else if waitOnDevice {
                    if deviceEvents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                        throw IIOError.system("poll", device: label, errno: ENODEV)
                    }
                    if deviceEvents & Int16(POLLIN) == 0 { continue }
                }
            }
            let read = buffer.refill()
            moreWaiting = false
            if read == -Int(EAGAIN) {
                if stopping { break }
                continue
            }
            // A device gone as the recording stops: what was read is kept, the stop goes on.
            if read < 0 && stopping { break }
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
                clockBoard?.offer(tracker, nowNs: dequeued)
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
            let (first, count, step) = buffer.scans()
            // A full read may have left more in the kernel's buffer: read again at once.
            moreWaiting = count >= samplesPerRead
            for index in 0..<count {
                let scan = first + index * step
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
    /// interval takes the side that continues the timeline.
    @inline(__always)
    private mutating func mappedNow(_ deviceNs: Int64) -> ClockTracker.Mapped? {
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
