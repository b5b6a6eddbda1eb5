import CV4L2
import FieldcapCore

extension V4L2Camera {
    /// How the driver stamps its buffers: the clock, and start of exposure or end of frame.
    var kernelTimestamps: (clock: String, source: String) {
        let clock: String
        switch timestampFlags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) {
        case UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC): clock = "CLOCK_MONOTONIC"
        case UInt32(V4L2_BUF_FLAG_TIMESTAMP_COPY): clock = "copied from the output side"
        default: clock = "unknown"
        }
        let source = timestampFlags & UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_SOE) != 0 ? "start of exposure" : "end of frame"
        return (clock, source)
    }

    public var report: SourceReport {
        let stamps = kernelTimestamps
        var rateSource: String =
            switch rateChoice {
            case .asked: "asked"
            case .standard: "fieldcap's default; fps= to change"
            case .highestListed: "the highest the camera lists for this size, since it lists no 30; fps= to change"
            case .current: "the camera's own rate: it lists none; fps= to change"
            }
        if let askedRate, abs(askedRate - grantedRate) > 0.01 {
            rateSource = "asked for \(SourceReport.rate(askedRate)), the camera granted this; " + rateSource
        }
        var controls: [String: JSONValue] = [:]
        for control in appliedControls {
            controls[control.name] = ["asked": .integer(control.asked), "granted": .integer(control.granted)]
        }
        var granted: JSONValue = [
            "device": .string(descriptor.device), "driver": .string(identity.driver), "card": .string(identity.card),
            "bus": .string(identity.bus), "format": .string(grantedFormat.pixelFormat.rawValue),
            "width": JSONValue(grantedFormat.width), "height": JSONValue(grantedFormat.height),
            "rate": .double(grantedRate), "rate_source": .string(rateChoice.rawValue),
            "buffers": JSONValue(buffers.count),
            "controls": .object(controls),
            "kernel_timestamps": ["clock": .string(stamps.clock), "source": .string(stamps.source)],
        ]
        let summary =
            "\(identity.card) (\(identity.driver), \(identity.bus)), \(grantedFormat.pixelFormat.rawValue) "
            + "\(grantedFormat.width)x\(grantedFormat.height), \(SourceReport.rate(grantedRate)) fps (\(rateSource)), "
            + "\(buffers.count) buffers, kernel timestamps: \(stamps.clock), \(stamps.source)"
            + (appliedControls.isEmpty
                ? "" : ", controls " + appliedControls.map { "\($0.name)=\($0.granted)" }.joined(separator: " "))
            + (rejoinPolicy.map { ", taken up again after an unplug (up to \($0.maxReturns) times; \($0.watching))" }
                ?? "")
            + exposureSummary
        if case .object(var fields) = granted {
            fields["stamp"] = .string(stamp.rawValue)
            if let metadata { fields["metadata_node"] = .string(metadata.path) }
            granted = .object(fields)
        }
        if let rejoinPolicy, case .object(var fields) = granted {
            fields["rejoin"] = [
                "max_returns": JSONValue(rejoinPolicy.maxReturns), "watching": .string(rejoinPolicy.watching),
            ]
            granted = .object(fields)
        }
        var reasons: [String: JSONValue] = [:]
        for fallback in DequeueFallback.allCases where dequeueFallbacks[fallback.rawValue] > 0 {
            reasons[fallback.reason] = JSONValue(dequeueFallbacks[fallback.rawValue])
        }
        let details: JSONValue = [
            "driver": .string(identity.driver), "card": .string(identity.card), "bus": .string(identity.bus),
            "granted_rate": .double(grantedRate), "kernel_sequence_gaps": sequenceGaps.json,
            "frames_stamped_at_dequeue": JSONValue(untrustedTimestamps),
            "frames_with_error_flag": JSONValue(errorFlaggedFrames), "empty_buffers": JSONValue(emptyBuffers),
            "controls": .object(controls), "clock_mapping": clockTracker.json(from: "CLOCK_MONOTONIC"),
            "exposure": exposureJSON,
        ]
        var warnings: [String] = []
        if untrustedTimestamps > 0 {
            let why = DequeueFallback.allCases.filter { dequeueFallbacks[$0.rawValue] > 0 }.map {
                "\(dequeueFallbacks[$0.rawValue]): \($0.reason)"
            }
            var hint = ""
            if dequeueFallbacks[DequeueFallback.aheadOfDequeue.rawValue] > 0 && stamps.source == "end of frame" {
                hint =
                    "; a start-of-exposure timestamp source, where the camera has one, gives kernel times"
                    + " (vivid: ctrl.timestamp_source=1)"
            }
            warnings.append(
                "\(untrustedTimestamps) of \(framesDequeued) frames were stamped at dequeue, not with the kernel's time"
                    + " (\(why.joined(separator: "; ")))\(hint)")
        }
        if sequenceGaps.count > 0 {
            warnings.append(
                "the kernel skipped \(sequenceGaps.count) frames (sequence gaps) in \(sequenceGaps.distinctRuns) places"
            )
        }
        if errorFlaggedFrames > 0 {
            warnings.append(
                "\(errorFlaggedFrames) frames came with V4L2_BUF_FLAG_ERROR (kept; their data may be corrupt)")
        }
        if let absences = presence?.absences, !absences.isEmpty {
            let back = absences.filter { $0.returnedNs != nil }.count
            warnings.append(
                "the camera went away \(absences.count) times and came back \(back) times"
                    + " (the times away are in fieldcap.json: away)")
        }
        if stamp.isExposure && framesWithoutExposure > 0 {
            warnings.append(
                "\(framesWithoutExposure) of \(framesDequeued) frames had no start of exposure from the camera's"
                    + " metadata and kept the kernel's time"
                    + (metadataNotes.isEmpty
                        ? " (the camera's clock is fitted over its first two seconds before any is mapped)"
                        : " (\(metadataNotes[0]))"))
        }
        if emptyBuffers > 0 {
            warnings.append("\(emptyBuffers) buffers came back with no data (not frames: not written)")
        }
        return SourceReport(
            kind: "v4l2", granted: granted, summary: summary,
            timeSource: stamp == .dequeue
                ? "dequeue (stamp=dequeue)"
                : stamp.isExposure
                    ? (stamp == .exposureMiddle
                        ? "camera's middle of exposure (PTS + half the exposure time), mapped"
                        : "camera's start of exposure (PTS), mapped")
                    : untrustedTimestamps == 0
                        ? "kernel, mapped" : "kernel, mapped (\(untrustedTimestamps) at dequeue)",
            timestamps: stamp.isExposure
                ? exposureTimestamps
                : [
                    "capture_ns":
                        "the buffer's kernel timestamp (CLOCK_MONOTONIC) mapped into CLOCK_MONOTONIC_RAW by clock pairs"
                        + " read at every dequeue (a frame stamped across a change of CLOCK_MONOTONIC's rate is placed"
                        + " once the next pair shows the new rate); the dequeue time for frames whose timestamp could"
                        + " not be trusted (counted in frames_stamped_at_dequeue)",
                    "uncertainty_ns":
                        "mapped frames: 1 µs (the kernel's timeval resolution) plus the clock mapping's bound"
                        + " (half the dequeue pair's bracket, the rate's error over the distance from it, and the largest rate"
                        + " change that could have gone unseen; wider for a frame whose interval held a rate change, by"
                        + " what the change could do); the driver's own stamping latency is not included. Frames"
                        + " stamped at dequeue: one frame period",
                ],
            details: details, clockTracker: clockTracker, warnings: warnings)
    }
}

extension V4L2Camera {
    /// For the start line: where the start of exposure comes from, or why it does not.
    var exposureSummary: String {
        let middle =
            exposureIsAuto
            ? "the middle of the camera's exposure (its PTS and half of its exposure time, which its auto "
                + "exposure chooses: followed, \(cFormat("%.1f", Double(exposureTimeNs) / 1e6)) ms at the start)"
            : "the middle of the camera's exposure (its PTS and half of its fixed exposure time, "
                + "\(cFormat("%.1f", Double(exposureTimeNs) / 1e6)) ms)"
        switch (stamp, metadata) {
        case (.exposureStart, let metadata?):
            return ", capture_ns: the camera's start of exposure (its PTS, through \(metadata.path))"
        case (.exposureMiddle, let metadata?):
            return ", capture_ns: \(middle), through \(metadata.path)"
        case (.exposureStart, nil), (.exposureMiddle, nil):
            return ", capture_ns: the kernel's time (stamp=\(stamp.rawValue), but "
                + (metadataNotes.first ?? "the camera has no metadata node") + ")"
        case (.kernel, let metadata?):
            return ", start of exposure in the frame log (its PTS, through \(metadata.path))"
        case (.kernel, nil):
            return ""
        case (.dequeue, _):
            return ", capture_ns: the dequeue time (stamp=dequeue; the kernel's time is in the frame log)"
        }
    }

    /// What `capture_ns` and `uncertainty_ns` mean with `stamp=exposure-start`.
    var exposureTimestamps: [String: String] {
        [
            "capture_ns":
                (stamp == .exposureMiddle
                ? "the middle of the camera's exposure: its start (below) plus half the exposure time the camera"
                    + " had as the frame began (exposure_time_absolute, followed while recording: read twice a"
                    + " frame period on auto exposure, once a second when fixed; exposure_time_ns in the"
                    + " frame log). Its start: " : "")
                + "the camera's start of exposure: the PTS of the frame's first payload (UVC), mapped from the camera's"
                + " clock to CLOCK_MONOTONIC through the payload headers' clock references and the USB frame"
                + " counter, then into CLOCK_MONOTONIC_RAW by the clock pairs read at every dequeue; frames without"
                + " one keep the kernel's timestamp, mapped (counted in exposure.frames_without_exposure)",
            "uncertainty_ns":
                "what every recent clock reference allows for the PTS (each received after it was sent, within its"
                + " frames in transit; carried at the fitted rate, widened by three times the rate's error), plus"
                + " the MONOTONIC to RAW mapping's bound (and for the middle: half the exposure time's unit,"
                + " 50 µs, and where the readings around the frame's start differ, a quarter of their"
                + " difference); the camera's own latency between exposure and PTS is its own",
        ]
    }

    /// The metadata node and the camera's clock model, for the sidecar.
    var exposureJSON: JSONValue {
        let health = metadata?.model.health ?? metadataHealth
        var fields: [String: JSONValue] = [
            "stamp": .string(stamp.rawValue), "frames_with_exposure": JSONValue(framesWithExposure),
            "frames_without_exposure": JSONValue(framesWithoutExposure),
            "frames_held_back": JSONValue(framesHeldBack),
            "exposure_time_ns": JSONValue(exposureTimeNs),
            "auto_exposure": JSONValue(exposureIsAuto),
            "notes": .array(metadataNotes.map { .string($0) }),
        ]
        if let metadata {
            fields["metadata_node"] = .string(metadata.path)
            fields["damaged_buffers"] = JSONValue(metadata.damagedBuffers)
        }
        if stamp == .exposureMiddle {
            let followed = exposureFollowed
            var entry: [String: JSONValue] = [
                "readings": JSONValue(followed.readings), "failed_readings": JSONValue(followed.failures),
                "changes": JSONValue(followed.changes), "frames_at_a_change": JSONValue(followed.framesAtAChange),
                "frames_ahead_of_readings": JSONValue(followed.framesAheadOfReadings),
                "cached_readings": JSONValue(followed.cachedReadings),
            ]
            if followed.maximumNs > 0 {
                entry["minimum_ns"] = JSONValue(followed.minimumNs)
                entry["maximum_ns"] = JSONValue(followed.maximumNs)
            }
            if let error = followed.lastError { entry["last_error"] = .string("\(error)") }
            fields["exposure_followed"] = .object(entry)
        }
        if let health {
            fields["clock_references"] = JSONValue(health.references)
            fields["clock_references_left_out"] = JSONValue(health.leftOut)
            if let modulus = health.hostFrameModulus { fields["host_frame_modulus"] = JSONValue(modulus) }
            fields["restarts"] = JSONValue(health.restarts)
            fields["mapped"] = JSONValue(health.mapped)
            fields["frame_counters_inconsistent"] = JSONValue(health.inconsistent)
            // Finite only: a camera's odd clock must not stop the sidecar from being written.
            if let rate = health.ticksPerSecond, rate.isFinite { fields["camera_clock_hz"] = .double(rate) }
            if let error = health.rateErrorPPM, error.isFinite {
                fields["camera_clock_rate_error_ppm"] = .double(error)
            }
            if let rms = health.residualRMSNs, rms.isFinite { fields["transit_jitter_rms_ns"] = .double(rms) }
        }
        return .object(fields)
    }
}
