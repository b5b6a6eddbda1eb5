import FieldcapCore
import FieldcapSystem

/// A UVC camera's own start of exposure: its metadata node read beside the video, each frame's
/// PTS mapped through the camera's clock model into `CLOCK_MONOTONIC` and then, with the clock
/// pairs the camera reads at every dequeue, into `CLOCK_MONOTONIC_RAW`. The metadata node is a
/// help, never a condition: when it cannot be opened or fails, the camera streams on with the
/// kernel's timestamps and the sidecar says why.
extension V4L2Camera {
    /// Opens the metadata node beside `videoNode`, if the camera has one: before the video node
    /// has buffers. `waitMs`: how long to look for it (a camera back from an unplug registers
    /// its metadata node after its video node), in steps a stop cuts short. Returns the stream,
    /// or why there is none.
    static func openMetadataStream(
        beside videoNode: String, finder: (@Sendable (String) -> String?)?, calls: any DeviceCalls,
        waitMs: Int = 0, stop: StopSignal? = nil
    ) -> (stream: UVCMetadataStream?, note: String?) {
        guard let finder else { return (nil, nil) }
        var waited = 0
        var found = finder(videoNode)
        while found == nil && waited < waitMs {
            if stop?.wait(milliseconds: 100) ?? false { return (nil, nil) }
            waited += 100
            found = finder(videoNode)
        }
        guard let path = found else {
            return (nil, waitMs > 0 ? "no metadata node came back beside \(videoNode) in \(waitMs) ms" : nil)
        }
        do {
            return (try UVCMetadataStream(path: path, calls: calls), nil)
        } catch {
            return (nil, "\(path) could not be read: \(error)")
        }
    }

    /// Stops reading the metadata node: the camera went away, or the node failed (`reason`).
    func closeMetadata(_ reason: String? = nil) {
        guard let metadata else { return }
        if let reason { metadataNotes.append("\(metadata.path): \(reason)") }
        metadataHealth = metadata.model.health
        metadata.close()
        self.metadata = nil
    }

    /// Starts the metadata queue before the video's; a failure closes it, saying why.
    func startMetadata() {
        do { try metadata?.start() } catch { closeMetadata("could not stream: \(error)") }
    }

    /// The frame's start of exposure into `record`, from its metadata (`sequence`: the kernel's
    /// number for the frame); left 0 when there is none. Drains the metadata node first: its
    /// buffer comes back together with the frame's.
    func readExposure(into record: inout CaptureRecord, sequence: UInt32) {
        record.exposureStartNs = 0
        record.exposureUncertaintyNs = 0
        guard let metadata else { return }
        do { try metadata.drain() } catch {
            closeMetadata("stopped: \(error)")
            return
        }
        // uvcvideo hands a metadata buffer back with every frame: a node silent for this many
        // frames has stalled, and is said so once (the frames keep the kernel's time meanwhile).
        if metadata.framesWithoutMetadata == Self.metadataStallFrames {
            note(
                "\(metadata.path): no metadata for \(Self.metadataStallFrames) frames while the video flowed (stalled)")
        }
        // Metadata that comes without the camera's clock (no PTS): each time it starts, said once.
        if metadata.buffersWithoutPTS == Self.metadataStallFrames {
            note(
                "\(metadata.path): no PTS in the metadata for \(Self.metadataStallFrames) frames while the video "
                    + "flowed (the camera's clock stopped travelling): those frames keep the kernel's time")
        }
        // A start of exposure more than a second from the kernel's own time for the frame is not
        // believed (a camera's clock gone wrong); the kernel's time is uvcvideo's clock too.
        guard let mapped = metadata.exposureStart(ofSequence: sequence),
            abs(mapped.hostNs &- record.deviceNs) <= 1_000_000_000, mapped.uncertaintyNs < 1_000_000_000,
            let raw = clockTrackerNow(mapped.hostNs), raw.rawNs > 0, raw.uncertaintyNs >= 0
        else { return }
        record.exposureStartNs = UInt64(raw.rawNs)
        record.exposureUncertaintyNs = mapped.uncertaintyNs + UInt64(raw.uncertaintyNs)
    }

    /// Frames without a metadata buffer (or without a PTS in it) before the node is said to have
    /// stalled.
    static let metadataStallFrames = 30
    /// The notes a camera keeps about its metadata node: a node that stalls again and again is
    /// said this many times.
    static let metadataNoteLimit = 20

    func note(_ text: String) {
        if metadataNotes.count < Self.metadataNoteLimit { metadataNotes.append(text) }
    }

    /// `exposure_time_absolute`'s unit (V4L2: 100 µs): the exposure time is known to half of it.
    static let exposureStepNs: UInt64 = 100_000

    /// The exposure time at setup, for `stamp=exposure-middle`, and whether the camera chooses it
    /// (its auto exposure is on: `auto_exposure` other than 1, manual).
    ///
    /// - Throws: `V4L2Error` saying what to use instead, when the camera does not report its
    ///   exposure time.
    static func exposureTime(of device: V4L2Device) throws(V4L2Error) -> (ns: UInt64, isAuto: Bool) {
        guard let units = device.controlValue("exposure_time_absolute"), units > 0 else {
            throw V4L2Error(
                code: .unsupported, device: device.path, operation: "stamp=exposure-middle",
                hint: "it does not report its exposure time (no exposure_time_absolute control); "
                    + "use stamp=exposure-start, or stamp=kernel")
        }
        let mode = device.controlValue("auto_exposure") ?? device.controlValue("exposure_auto")
        return (UInt64(units) * exposureStepNs, mode.map { $0 != 1 } ?? false)
    }

    /// With `stamp=exposure-middle`, the exposure time followed while the camera streams: twice a
    /// frame period on auto exposure, once a second when fixed (a program may still set it).
    func startExposureWatch() -> ExposureWatch? {
        guard stamp == .exposureMiddle,
            let control = device.controls().first(where: { $0.name == "exposure_time_absolute" })
        else { return nil }
        let framePeriodNs = UInt64(1e9 / (grantedRate > 0 ? grantedRate : 30))
        let reader = ControlReader(device: device, id: control.id)
        // What an exposure not read can be: what the control allows, and no longer than two frame
        // periods (a camera exposing longer than its frame interval slows its frames, as auto
        // exposure's priority lets it, by as much: two periods covers a rate halved).
        let low = min(control.minimum, control.maximum)
        let high = max(low, min(max(control.minimum, control.maximum), Int64(2 * framePeriodNs / Self.exposureStepNs)))
        let watch = ExposureWatch(
            device: device.path, unitNs: Self.exposureStepNs,
            periodNs: exposureIsAuto ? framePeriodNs : 2_000_000_000, isAuto: exposureIsAuto, range: low...high
        ) { reader.read() }
        watch.start()
        return watch
    }

    /// The stream ended: the watch stops, its figures are kept for the sidecar.
    func stopExposureWatch(_ watch: ExposureWatch?) {
        guard let watch else { return }
        watch.finish()
        let figures = watch.figures
        exposureFollowed.readings += figures.readings
        exposureFollowed.failures += figures.failures
        exposureFollowed.changes += figures.changes
        exposureFollowed.minimumNs = min(exposureFollowed.minimumNs, figures.minimumNs)
        exposureFollowed.maximumNs = max(exposureFollowed.maximumNs, figures.maximumNs)
        exposureFollowed.framesAtAChange += figures.framesAtAChange
        exposureFollowed.framesAheadOfReadings += figures.framesAheadOfReadings
        exposureFollowed.lastError = figures.lastError ?? exposureFollowed.lastError
        exposureFollowed.cachedReadings += figures.cachedReadings
        // On auto exposure a value read from uvcvideo's cache is the one it last had, not the
        // camera's choice: said, since the middles then assume it.
        if watch.readsFromCache {
            note(
                "\(device.path): exposure_time_absolute was answered from uvcvideo's cache (in under 20 µs), not by "
                    + "the camera, which does not mark it auto-update: the exposure its auto exposure chose is not "
                    + "seen, and the middles span what it allows up to two frame periods")
        }
    }

    /// A control read from the watch's thread: the device is used by the capture thread too,
    /// which the kernel allows (each ioctl on its own).
    private struct ControlReader: @unchecked Sendable {
        let device: V4L2Device
        let id: UInt32
        func read() -> Result<Int64, Errno> { device.readControl(id) }
    }
}
