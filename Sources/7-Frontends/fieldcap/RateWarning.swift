import FieldcapCore

/// The end-of-run warning for a stream that recorded far from its nominal rate: below 80% or
/// above 120% of what the device granted.
///
/// The rate is measured over the stream's own span, from its first record's `capture_ns` to its
/// last's, so a slow start (a UVC camera can take a second to deliver its first frame, vivid under
/// emulation longer) is not taken for a low rate; records fieldcap dropped and records the device
/// skipped lower it, as they lower what the session holds. A stream whose span is under a second
/// (it started very late, or delivered almost nothing) is measured over the whole run instead.
///
/// No warning for a run under 2 s (start-up is most of it), for a stream that ended early (the
/// summary says so, and why), or where the run holds fewer than 10 records at the nominal rate
/// (one record more or less would be 10%).
enum RateWarning {
    static let lowest = 0.8
    static let highest = 1.2
    static let shortestRunSeconds = 2.0
    static let shortestSpanSeconds = 1.0
    static let fewestRecords = 10.0

    /// The rate a stream recorded at, per second, and whether over its own span (true) or over
    /// the whole run.
    static func measured(
        written: Int, capturedSpanNs: ClosedRange<UInt64>?, elapsed: Double
    ) -> (rate: Double, overSpan: Bool) {
        if written >= 2, let span = capturedSpanNs, case let seconds = Double(span.upperBound - span.lowerBound) / 1e9,
            seconds >= shortestSpanSeconds
        {
            return (Double(written - 1) / seconds, true)
        }
        return (Double(written) / max(elapsed, 0.001), false)
    }

    /// The warning's text (without the stream id), or nil when the rate is near enough or cannot
    /// be judged.
    ///
    /// - Parameters:
    ///   - kind: video (fps, frames) or sensor (Hz, samples).
    ///   - nominal: the rate the device granted, per second.
    ///   - dropped: records fieldcap had no room for.
    ///   - deviceGaps: records the device itself skipped (nil: it cannot tell).
    ///   - elapsed: the run's length in seconds.
    ///   - endedEarly: whether the stream's capture ended before the run did.
    static func warning(
        kind: StreamDescriptor.Kind, nominal: Double, written: Int, dropped: Int, deviceGaps: Int?,
        capturedSpanNs: ClosedRange<UInt64>?, elapsed: Double, endedEarly: Bool
    ) -> String? {
        guard nominal > 0, !endedEarly, elapsed >= shortestRunSeconds, nominal * elapsed >= fewestRecords else {
            return nil
        }
        let (rate, overSpan) = measured(written: written, capturedSpanNs: capturedSpanNs, elapsed: elapsed)
        let ratio = rate / nominal
        guard ratio < lowest || ratio > highest else { return nil }
        let (unit, records) =
            switch kind {
            case .video: ("fps", "frame")
            case .sensor: ("Hz", "sample")
            case .feed: ("Hz", "record")
            }
        var text =
            cFormat("recorded at %.1f ", rate) + unit + cFormat(", %.0f%% of its nominal ", ratio * 100)
            + "\(SourceReport.rate(nominal)) \(unit)"
        text +=
            overSpan
            ? " (from its first \(records) to its last)" : cFormat(" (over the whole %.1f s run)", elapsed)
        var causes: [String] = []
        if dropped > 0 { causes.append("fieldcap dropped \(dropped) \(records)s: the disk or the CPU did not keep up") }
        if let gaps = deviceGaps, gaps > 0 { causes.append("the device skipped \(gaps) \(records)s") }
        if causes.isEmpty {
            if ratio > highest {
                causes.append("the device delivered more than the rate it reports")
            } else if kind == .video {
                causes.append(
                    "the camera delivered fewer frames than its rate; automatic exposure lowers the rate in "
                        + "low light: fix the exposure with ctrl.NAME=VALUE (`fieldcap list` shows the controls)"
                )
            } else if kind == .feed {
                causes.append("the program sent fewer records than its rate= says")
            } else {
                causes.append("the device delivered fewer samples than its rate")
            }
        }
        return text + ": " + causes.joined(separator: "; ")
    }
}
