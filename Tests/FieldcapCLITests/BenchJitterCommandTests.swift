import Foundation
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

@Suite("fieldcap bench jitter")
struct BenchJitterCommandTests {
    @Test("synthetic sources under load: a table, a JSON report with every stream's statistics, and an SVG that parses")
    func syntheticReport() throws {
        let report = freshPath("jitter")
        defer { try? FileManager.default.removeItem(atPath: report) }
        let result = try FieldcapProcess.run([
            "bench", "jitter", "--cam", "synthetic:320x240@30,id=cam", "--imu", "synthetic:500,id=imu",
            "--duration", "2s", "--load", "1", "--report", report,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        for text in [
            "cam  synthetic:320x240@30", "imu  synthetic:500", "interval error, dequeue", "with 1 busy threads",
        ] {
            #expect(result.stdout.contains(text), "\(result.stdout)")
        }
        let json =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(report)/jitter.json")))
            as! [String: Any]
        #expect(json["load_threads"] as? Int == 1)
        let share = json["cpu_share_of_one_core"] as! Double
        #expect(share > 0 && share < 0.9, "fieldcap's own CPU, without the busy thread's: \(share)")
        let streams = json["streams"] as! [[String: Any]]
        #expect(streams.map { $0["id"] as! String } == ["cam", "imu"])
        for stream in streams {
            let rate = stream["nominal_rate"] as! Double
            let records = stream["records"] as! Int
            #expect(Double(records) > rate * 1.0 && Double(records) < rate * 2.5, "\(stream)")
            let interval = stream["interval_error_dequeue"] as! [String: Any]
            // An interval for each record after the first, but none across a jump in the sequence
            // (a record the ring dropped on a busy machine), which skips at least one record.
            let count = interval["count"] as! Int
            let skipped = stream["skipped_by_device"] as! Int
            #expect(count <= records - 1 && count >= records - 1 - skipped, "\(stream)")
            // A synthetic source stamps at wake-up: its median interval error is far below a period.
            #expect(Double(interval["median_abs_ns"] as! Int) < 0.25e9 / rate, "\(interval)")
        }
        let svg = try Data(contentsOf: URL(fileURLWithPath: "\(report)/jitter.svg"))
        let parser = XMLParser(data: svg)
        #expect(parser.parse(), "the SVG is not well-formed XML: \(String(describing: parser.parserError))")
        // Per stream: two histogram curves and two time series (dequeue, capture_ns).
        #expect(String(decoding: svg, as: UTF8.self).components(separatedBy: "<path").count - 1 == 8)
    }

    @Test("nothing to measure, a bad load, or a report path that is a file: one clear error, exit 64")
    func badInvocations() throws {
        let file = freshPath("jitter-file")
        FileManager.default.createFile(atPath: file, contents: Data())
        defer { try? FileManager.default.removeItem(atPath: file) }
        for (arguments, expected) in [
            (["bench", "jitter"], "nothing to measure"),
            (["bench", "jitter", "--imu", "synthetic", "--load", "-1"], "--load"),
            (["bench", "jitter", "--imu", "synthetic", "--report", file], "is a file"),
        ] {
            let result = try FieldcapProcess.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(expected), "\(arguments): \(result.stderr)")
        }
    }
}
