import FieldcapCore

extension IIOIMU {
    public var report: SourceReport {
        let rateSource =
            rateDeclared
            ? "as rate= says: neither the device nor its trigger has a rate to set"
            : rateAsked
                ? "asked"
                : triggerMade
                    ? "the default of the trigger fieldcap made; rate= to change"
                    : "the \(trigger == nil ? "device" : "trigger")'s current rate; rate= to change"
        let triggerSource = triggerMade ? "made" : triggerAsked ? "asked" : "attached"
        var timeWords: String
        var timestamps: [String: String]
        var timeSource: String
        switch self.timeSource {
        case .kernelRaw:
            timeWords =
                "the kernel's timestamp channel, in monotonic_raw"
                + (timestampClockSet ? " (set by fieldcap, put back after)" : "")
            timeSource = "kernel, RAW"
            timestamps = [
                "capture_ns": "the sample's own timestamp channel, stamped by the kernel in CLOCK_MONOTONIC_RAW",
                "uncertainty_ns":
                    "1 µs: the kernel stamps in the trigger's interrupt; "
                    + "the sensor's own sampling delay is not included",
            ]
        case .kernelMapped(let clock):
            timeWords = "the kernel's timestamp channel, in \(clock), mapped into RAW"
            timeSource = "kernel \(clock), mapped"
            timestamps = [
                "capture_ns":
                    "the sample's own timestamp channel, mapped into CLOCK_MONOTONIC_RAW by a clock pair "
                    + "taken at every read (rate changes and steps of the clock are detected; samples "
                    + "stamped across a rate change are placed once the next read's pair shows the new rate)",
                "uncertainty_ns":
                    "1 µs plus the clock mapping's bound (half the read's pair's bracket, the "
                    + "rate's error over the distance from it, and the largest rate change that "
                    + "could have gone unseen; wider across a rate change, by what it could do)",
            ]
        case .extrapolated:
            timeWords = "none on the device: extrapolated back from each read"
            timeSource = "extrapolated"
            timestamps = [
                "capture_ns": "CLOCK_MONOTONIC_RAW at the read, minus one period per sample still to come in that read",
                "uncertainty_ns": "one sample period",
            ]
        }
        let clockName: String? =
            switch self.timeSource {
            case .kernelRaw: "monotonic_raw"
            case .kernelMapped(let clock): clock
            case .extrapolated: nil
            }
        let channels = valueChannels.map { channel -> JSONValue in
            [
                "name": .string(channel.name), "kernel_channel": .string(channel.kernelChannel),
                "unit": .string(channel.unit),
                "scale": .double(channel.scale), "offset": .double(channel.offset),
                "scan_format": .string(channel.format),
            ]
        }
        var granted: JSONValue = [
            "device": .string(descriptor.device), "device_id": .string(device.id), "name": .string(device.name),
            "channels": .array(valueChannels.map { ["name": .string($0.name), "unit": .string($0.unit)] }),
            "rate": .double(grantedRate),
            "rate_source": rateDeclared
                ? "declared" : rateAsked ? "asked" : triggerMade ? "made_trigger_default" : "current",
            "trigger": JSONValue(trigger), "trigger_made": .bool(triggerMade),
            "trigger_source": trigger == nil ? nil : .string(triggerSource),
            "channels_source": channelsAsked ? "asked" : "imu_kinds",
            "timestamp_clock": JSONValue(clockName), "timestamp_clock_set": .bool(timestampClockSet),
            "time_source": .string(timeSource),
        ]
        if let rejoinPolicy, case .object(var fields) = granted {
            fields["rejoin"] = [
                "max_returns": JSONValue(rejoinPolicy.maxReturns), "watching": .string(rejoinPolicy.watching),
            ]
            granted = .object(fields)
        }
        let channelWords =
            valueChannels.map { "\($0.name) (\($0.unit))" }.joined(separator: " ")
            + (channelsAsked ? "" : " (its accel, anglvel, magn and temp channels; channels= to choose)")
        let triggerWords =
            trigger.map { name in
                let how =
                    switch triggerSource {
                    case "made": "made by fieldcap: none was attached; removed after"
                    case "asked": "asked"
                    default: "the one attached to the device"
                    }
                return ", trigger \(name) (\(how))"
            } ?? ""
        let summary =
            "\(device.name) (\(device.id)), \(channelWords), \(SourceReport.rate(grantedRate)) Hz (\(rateSource))"
            + "\(triggerWords), timestamps: \(timeWords)"
            + (rejoinPolicy.map { ", taken up again after it goes away (up to \($0.maxReturns) times; \($0.watching))" }
                ?? "")
        var gaps: [String: JSONValue] = [
            "events": JSONValue(gapEvents), "samples_missing": JSONValue(timelineGaps.count),
            "records": timelineGaps.json["records"] ?? [],
        ]
        if timelineGaps.runsTruncated { gaps["records_truncated"] = true }
        var details: [String: JSONValue] = [
            "device_id": .string(device.id), "name": .string(device.name), "granted_rate": .double(grantedRate),
            "trigger": JSONValue(trigger), "time_source": .string(Self.sidecarTimeSource(self.timeSource)),
            "samples_read": JSONValue(samplesRead),
            "samples_before_start": JSONValue(samplesBeforeStart),
            "timeline_gaps": .object(gaps),
            "non_increasing_times": JSONValue(nonIncreasingTimes),
            "reclaimed_buffer_left_enabled": .bool(reclaimedStaleBuffer),
            "channels": .array(channels),
        ]
        if case .kernelMapped(let clock) = self.timeSource, let tracker = clockTracker {
            details["clock_steps"] = JSONValue(tracker.steps)
            details["clock_mapping"] = tracker.json(from: clock)
        }
        var warnings: [String] = []
        if timelineGaps.count > 0 {
            warnings.append(
                "\(timelineGaps.count) samples missing from the timeline, in "
                    + "\(gapEvents) gaps (the device or its trigger skipped them)"
            )
        }
        if let absences = presence?.absences, !absences.isEmpty {
            let back = absences.filter { $0.returnedNs != nil }.count
            warnings.append(
                "the device went away \(absences.count) times and came back \(back) times"
                    + " (the times away are in fieldcap.json: away)")
        }
        if nonIncreasingTimes > 0 {
            warnings.append("\(nonIncreasingTimes) samples were not after the previous one and were moved just past it")
        }
        return SourceReport(
            kind: "iio", granted: granted, summary: summary, timeSource: timeSource, timestamps: timestamps,
            details: .object(details), clockTracker: clockTracker, warnings: warnings)
    }

    /// The sidecar's `time_source` sentence.
    static func sidecarTimeSource(_ source: TimeSource) -> String {
        switch source {
        case .kernelRaw: "timestamp channel in monotonic_raw"
        case .kernelMapped(let clock): "timestamp channel in \(clock), mapped into CLOCK_MONOTONIC_RAW"
        case .extrapolated: "no timestamp channel: extrapolated back from each read (T - (N-1-i) * period)"
        }
    }
}
