import FieldcapBench
import FieldcapCore
import FieldcapSession
import Glibc

/// What `fieldcap bench jitter` found: a terminal table, a JSON document and an SVG picture.
struct JitterReport {
    struct Stream {
        var source: CaptureSource
        var jitter: StreamJitter
        var summary: Recorder.StreamSummary

        /// The clock mapping the source used, if it maps a kernel clock into RAW.
        var clockTracker: ClockTracker? { source.report.clockTracker }

        /// Where capture_ns came from, in a few words.
        var timeSource: String { source.report.timeSource }

        var drops: Int { summary.dropped + jitter.sequenceGaps }
    }

    var streams: [Stream]
    /// CLOCK_MONOTONIC_RAW when measuring started.
    var startedNs: UInt64
    var seconds: Double
    /// The process's CPU time, busy threads included.
    var cpuSeconds: Double
    var busyCPUSeconds: Double
    var load: Int

    /// fieldcap's own CPU as a share of one core.
    var cpuShare: Double { max(0, cpuSeconds - busyCPUSeconds) / max(seconds, 1e-9) }

    private func secondsAfterStart(_ rawNs: Int64) -> Double { Double(rawNs - Int64(startedNs)) / 1e9 }

    private static func us(_ ns: Int64) -> String { cFormat("%.1f", Double(ns) / 1000) }

    func table() -> String {
        var lines = [
            cFormat("%.1f s, fieldcap CPU %.1f%% of one core", seconds, cpuShare * 100)
                + (load > 0 ? " (with \(load) busy threads)" : "")
        ]
        lines.append("in µs: median / p99 / p99.9 / max of the absolute value, then the signed extremes [min, max]")
        for stream in streams {
            let j = stream.jitter
            lines.append("")
            lines.append(
                "\(j.id)  \(stream.source.descriptor.device)  \(cFormat("%g", stream.source.descriptor.nominalRate)) "
                    + "/s  \(j.records) records, \(stream.drops) dropped, capture_ns: \(stream.timeSource)"
            )
            for (name, s) in [
                ("interval error, dequeue  ", j.dequeueIntervalError),
                ("interval error, capture  ", j.captureIntervalError),
                ("dequeue latency          ", j.dequeueLatency),
            ] {
                lines.append(
                    "  \(name)" + [s.medianNs, s.p99Ns, s.p999Ns, s.maxAbsNs].map(Self.us).joined(separator: " / ")
                        + "  [\(Self.us(s.minNs)), \(Self.us(s.maxNs))]")
            }
            if let tracker = stream.clockTracker {
                lines.append(
                    cFormat(
                        "  clock mapping             bracket %ld ns, drift %+.2f "
                            + "ppm, %ld rate changes, worst bound %.1f µs at %.2f s",
                        tracker.latest?.bracketNs ?? 0, tracker.driftPPM ?? 0, tracker.rateChanges,
                        Double(tracker.worstUncertaintyNs) / 1000, secondsAfterStart(tracker.worstUncertaintyAtRawNs)))
            }
            if let error = stream.summary.captureError { lines.append("  ended early: \(error)") }
        }
        return lines.joined(separator: "\n")
    }

    /// `jitter.json`: what `JSONSerialization` wrote with `[.prettyPrinted, .sortedKeys]`, as the
    /// sidecar's writer writes it, without the sidecar's closing newline.
    func json() throws -> [UInt8] {
        func summary(_ s: StreamJitter.Summary) -> JSONValue {
            [
                "count": JSONValue(s.count), "min_ns": JSONValue(s.minNs), "max_ns": JSONValue(s.maxNs),
                "median_abs_ns": JSONValue(s.medianNs), "p99_abs_ns": JSONValue(s.p99Ns),
                "p999_abs_ns": JSONValue(s.p999Ns), "max_abs_ns": JSONValue(s.maxAbsNs),
            ]
        }
        let document: [String: JSONValue] = [
            "fieldcap_version": .string(Fieldcap.version), "seconds": .double(seconds), "load_threads": JSONValue(load),
            "cpu_share_of_one_core": .double(cpuShare),
            "streams": .array(
                streams.map { stream in
                    var entry: [String: JSONValue] = [
                        "id": .string(stream.jitter.id), "device": .string(stream.source.descriptor.device),
                        "nominal_rate": .double(stream.source.descriptor.nominalRate),
                        "records": JSONValue(stream.jitter.records),
                        "dropped_in_ring": JSONValue(stream.summary.dropped),
                        "skipped_by_device": JSONValue(stream.jitter.sequenceGaps),
                        "sequence_restarts": JSONValue(stream.jitter.sequenceRestarts),
                        "capture_ns_source": .string(stream.timeSource),
                        "interval_error_dequeue": summary(stream.jitter.dequeueIntervalError),
                        "interval_error_capture": summary(stream.jitter.captureIntervalError),
                        "dequeue_latency": summary(stream.jitter.dequeueLatency),
                        "dequeue_after_capture_violations": JSONValue(stream.jitter.negativeLatencies),
                    ]
                    if let tracker = stream.clockTracker {
                        entry["clock_mapping"] = [
                            "bracket_ns": JSONValue(tracker.latest?.bracketNs ?? 0),
                            "drift_ppm": .double(tracker.driftPPM ?? 0),
                            "offset_ns": JSONValue(tracker.latest?.offsetNs ?? 0),
                            "rate_changes": JSONValue(tracker.rateChanges), "steps": JSONValue(tracker.steps),
                            "worst_uncertainty_ns": JSONValue(tracker.worstUncertaintyNs),
                            "worst_uncertainty_at_s": .double(secondsAfterStart(tracker.worstUncertaintyAtRawNs)),
                        ]
                    }
                    if let error = stream.summary.captureError { entry["ended_early"] = .string(error) }
                    return .object(entry)
                }),
        ]
        return Array(try Sidecar.bytes(document).dropLast())
    }

    // MARK: picture

    /// One panel per stream: on the left the absolute interval errors in logarithmic buckets
    /// (dequeue in orange, capture_ns in blue), on the right the interval error over time.
    func svg() -> String {
        let width = 1000.0, panelHeight = 260.0, top = 40.0
        let height = top + panelHeight * Double(max(1, streams.count)) + 10
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="18" font-size="14">fieldcap bench jitter: \(cFormat("%.1f", seconds)) \
            s\(load > 0 ? ", \(load) busy threads" : ""), CPU \(cFormat("%.1f", cpuShare * 100))% of one core</text>
            <text x="10" y="32" fill="#d95f02">dequeue time</text><text x="100" y="32" fill="#1b6fb5">capture_ns</text>

            """
        for (index, stream) in streams.enumerated() {
            let y0 = top + Double(index) * panelHeight
            out += panel(stream, x: 10, y: y0, width: width - 20, height: panelHeight - 20)
        }
        return out + "</svg>\n"
    }

    private func panel(_ stream: Stream, x: Double, y: Double, width: Double, height: Double) -> String {
        let j = stream.jitter
        var out =
            "<text x=\"\(x)\" y=\"\(y + 12)\" font-weight=\"bold\">\(escape(j.id)) "
            + "(\(escape(stream.source.descriptor.device)), "
            + "\(cFormat("%g", stream.source.descriptor.nominalRate))/s, capture_ns: "
            + "\(escape(stream.timeSource)))</text>\n"
        let plotTop = y + 20, plotHeight = height - 40
        // Left: histogram of |interval error|, log-log.
        let hx = x + 40, hw = width * 0.4 - 50
        let buckets = j.intervalErrorBuckets()
        out += axes(
            x: hx, y: plotTop, width: hw, height: plotHeight, xLabel: "|interval error| (µs, log)",
            yLabel: "count (log)")
        if !buckets.isEmpty {
            let maxCount = Double(buckets.map { max($0.dequeue, $0.capture) }.max() ?? 1)
            let lowest = log10(Double(buckets.first!.upperNs) / 2), highest = log10(Double(buckets.last!.upperNs))
            func px(_ ns: UInt64) -> Double {
                hx + (log10(Double(max(ns, 1))) - lowest) / max(highest - lowest, 1e-9) * hw
            }
            func py(_ count: UInt64) -> Double {
                plotTop + plotHeight - (count == 0 ? 0 : log10(Double(count) + 1) / log10(maxCount + 1) * plotHeight)
            }
            for (color, value) in [
                ("#d95f02", { (b: (upperNs: UInt64, dequeue: UInt64, capture: UInt64)) in b.dequeue }),
                ("#1b6fb5", { (b: (upperNs: UInt64, dequeue: UInt64, capture: UInt64)) in b.capture }),
            ] {
                var path = "M \(f(px(buckets[0].upperNs / 2))) \(f(plotTop + plotHeight))"
                var lower = buckets[0].upperNs / 2
                for bucket in buckets {
                    path +=
                        " L \(f(px(lower))) \(f(py(value(bucket)))) L \(f(px(bucket.upperNs))) \(f(py(value(bucket))))"
                    lower = bucket.upperNs
                }
                out += "<path d=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.5\"/>\n"
            }
            out +=
                "<text x=\"\(f(hx))\" "
                + "y=\"\(f(plotTop + plotHeight + 24))\">\(cFormat("%.1f", Double(buckets.first!.upperNs) / 2000)) "
                + "µs</text>"
            out +=
                "<text x=\"\(f(hx + hw - 50))\" "
                + "y=\"\(f(plotTop + plotHeight + 24))\">\(cFormat("%.0f", Double(buckets.last!.upperNs) / 1000)) "
                + "µs</text>\n"
        }
        // Right: the interval error over time, in µs, symmetric around zero.
        let tx = x + width * 0.4 + 40, tw = width * 0.6 - 50
        out += axes(
            x: tx, y: plotTop, width: tw, height: plotHeight, xLabel: "time (s)", yLabel: "interval error (µs)")
        let points = j.series
        if let last = points.last {
            let limit = Double(
                max(
                    1_000,
                    points.map { max(abs($0.dequeueErrorNs), abs($0.captureErrorNs)) }.sorted()[
                        min(points.count - 1, points.count * 999 / 1000)]))
            let span = max(last.seconds, 1e-9)
            func px(_ seconds: Double) -> Double { tx + seconds / span * tw }
            func py(_ ns: Int64) -> Double {
                plotTop + plotHeight / 2 - max(-1, min(1, Double(ns) / limit)) * plotHeight / 2
            }
            for (color, value) in [
                ("#d95f02", { (p: StreamJitter.Point) in p.dequeueErrorNs }),
                ("#1b6fb5", { (p: StreamJitter.Point) in p.captureErrorNs }),
            ] {
                let path = points.enumerated().map {
                    "\($0.offset == 0 ? "M" : "L") \(f(px($0.element.seconds))) \(f(py(value($0.element))))"
                }.joined(separator: " ")
                out += "<path d=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"0.8\" opacity=\"0.8\"/>\n"
            }
            out +=
                "<line x1=\"\(f(tx))\" y1=\"\(f(plotTop + plotHeight / 2))\" x2=\"\(f(tx + tw))\" "
                + "y2=\"\(f(plotTop + plotHeight / 2))\" stroke=\"#999\" stroke-dasharray=\"3 3\"/>\n"
            out += "<text x=\"\(f(tx - 36))\" y=\"\(f(plotTop + 10))\">+\(cFormat("%.0f", limit / 1000))</text>"
            out +=
                "<text x=\"\(f(tx - 36))\" y=\"\(f(plotTop + plotHeight))\">−\(cFormat("%.0f", limit / 1000))</text>"
            out +=
                "<text x=\"\(f(tx + tw - 30))\" y=\"\(f(plotTop + plotHeight + 24))\">\(cFormat("%.1f", span))</text>\n"
        }
        return out
    }

    private func axes(x: Double, y: Double, width: Double, height: Double, xLabel: String, yLabel: String) -> String {
        "<rect x=\"\(f(x))\" y=\"\(f(y))\" width=\"\(f(width))\" "
            + "height=\"\(f(height))\" fill=\"none\" stroke=\"#333\"/>\n"
            + "<text x=\"\(f(x + width / 2 - 60))\" y=\"\(f(y + height + 14))\">\(xLabel)</text>\n"
            + "<text transform=\"translate(\(f(x - 26)),\(f(y + height / 2 + 40))) rotate(-90)\">\(yLabel)</text>\n"
    }

    private func f(_ value: Double) -> String { cFormat("%.1f", value) }

    private func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
