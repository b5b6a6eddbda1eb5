import Foundation
import SyncField
import TestSupport
import Testing

/// `fieldcap.json`'s `wall_clock`: what the daemon that disciplines the clock said at the sync
/// point, from a real chronyd on loopback, and from nothing at all.
@Suite("fieldcap record --wall-clock", .serialized)
struct WallClockTests {
    @Test("chronyd following a source: its tracking and the bound beside each segment's sync point, and the capture id")
    func chronyFollowingASource() throws {
        let chrony = try LoopbackChrony()
        let independent = try chrony.waitUntilSynchronised().split(separator: ",").map(String.init)
        let out = freshPath("wall-clock")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try FieldcapProcess.run([
            "--imu", "synthetic:200", "--duration", "2500ms", "--segment", "2s", "--out", out,
            "--wall-clock", "chrony:\(chrony.clientSocket)", "--capture-id", "lab-0412",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let segments = try FileManager.default.contentsOfDirectory(atPath: out).filter { $0.first?.isNumber == true }
            .sorted()
        #expect(segments.count == 2, "\(segments)")
        var readings: [Double] = []
        for segment in segments {
            let directory = "\(out)/\(segment)"
            #expect(SessionValidator.validate(directory: directory).problems.isEmpty)
            #expect(try sidecar(directory)["capture_id"] as? String == "lab-0412")
            let clock = try #require(try sidecar(directory)["wall_clock"] as? [String: Any], "\(segment)")
            #expect(clock["source"] as? String == "chrony")
            #expect(clock["synchronised"] as? Bool == true)
            let tracking = try #require(clock["chrony"] as? [String: Any])
            #expect(tracking["reference_id"] as? String == independent[0])
            #expect(tracking["stratum"] as? Int == Int(independent[2]))
            #expect(tracking["leap_status"] as? String == "Normal")
            let bound = try #require(clock["error_bound_ns"] as? Int)
            // Under the 1 s of a clock without a source (just after the client first follows the
            // server, its dispersion is still large on a loaded host).
            #expect(bound > 0 && bound < 1_000_000_000, "\(bound) ns on loopback")
            readings.append(try #require(clock["read_seconds_after_sync_point"] as? Double))
        }
        // Asked right after the first sync point; the second segment keeps that reading (one
        // serves a minute), and says how long before its own sync point it was taken.
        #expect(readings[0] >= 0 && readings[0] < 1, "\(readings)")
        #expect(readings[1] <= 0 && readings[1] > -3, "\(readings)")
        let trackings = try segments.map { try sidecar("\(out)/\($0)")["wall_clock"] as? [String: Any] }
            .map { $0?["chrony"] as? NSDictionary }
        #expect(trackings[0] != nil && trackings[0] == trackings[1])
    }

    @Test("no daemon answers: the recording goes on, and the sidecar says why")
    func nobodyAnswers() throws {
        let out = freshPath("wall-clock-none")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try FieldcapProcess.run([
            "--imu", "synthetic:200", "--duration", "500ms", "--out", out,
            "--wall-clock", "chrony:/nonexistent/chronyd.sock",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(SessionValidator.validate(directory: out).problems.isEmpty)
        let clock = try #require(try sidecar(out)["wall_clock"] as? [String: Any])
        #expect(clock["source"] as? String == "none")
        #expect(clock["synchronised"] as? Bool == false)
        #expect(clock["error_bound_ns"] == nil)
        #expect(
            clock["not_synchronised"] as? String == "chronyc: no answer from chronyd at /nonexistent/chronyd.sock")
    }

    @Test("a --wall-clock it does not know: one line that says what it takes, exit 64, nothing made")
    func badArgument() throws {
        let out = freshPath("wall-clock-bad")
        let result = try FieldcapProcess.run([
            "--imu", "synthetic:200", "--duration", "500ms", "--out", out, "--wall-clock", "ntp",
        ])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--wall-clock"), "\(result.stderr)")
        #expect(result.stderr.contains("auto|chrony[:SOCKET]|ptp[:SOCKET]|none"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
