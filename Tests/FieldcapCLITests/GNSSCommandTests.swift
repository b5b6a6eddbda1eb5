import Foundation
import SyncField
import TestSupport
import Testing

/// An NMEA 0183 log a receiver moving north-east would send: GGA, GSA, GSV and RMC each epoch, a second
/// apart from 12:00:00 UTC on 2026-11-29, without a fix in the epochs of `noFix`. Returns the log and each epoch's truth: its UTC ns, latitude, longitude, fix.
private func nmeaLog(epochs: Range<Int>, noFix: Set<Int>) -> (text: String, truth: [UInt64: (Double, Double, Bool)]) {
    func sentence(_ body: String) -> String {
        let checksum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        return "$" + body + "*" + String(format: "%02X", checksum) + "\r\n"
    }
    var text = ""
    var truth: [UInt64: (Double, Double, Bool)] = [:]
    for epoch in epochs {
        let fix = !noFix.contains(epoch)
        let latitude = 48.1173 + Double(epoch) * 1e-5
        let longitude = 11.5167 + Double(epoch) * 2e-5
        let time = String(format: "12%02d%02d.00", epoch / 60, epoch % 60)
        let lat = String(format: "%02d%07.4f", Int(latitude), (latitude - Double(Int(latitude))) * 60)
        let lon = String(format: "%03d%07.4f", Int(longitude), (longitude - Double(Int(longitude))) * 60)
        // Without a fix a receiver leaves the position empty, as gpsd then reports mode 1.
        // Four satellites in view (GSV), all used while there is a fix (GSA): gpsd's SKY.
        if fix {
            text += sentence("GPGGA,\(time),\(lat),N,\(lon),E,1,08,0.9,545.4,M,46.9,M,,")
            text += sentence("GPGSA,A,3,04,05,09,12,,,,,,,,,2.5,1.3,2.1")
            text += sentence("GPGSV,1,1,04,04,45,120,40,05,30,200,35,09,60,300,42,12,15,050,30")
            text += sentence("GPRMC,\(time),A,\(lat),N,\(lon),E,001.9,045.0,291126,,")
        } else {
            text += sentence("GPGGA,\(time),,,,,0,00,,,M,,M,,")
            text += sentence("GPGSA,A,1,,,,,,,,,,,,,,,")
            text += sentence("GPGSV,1,1,04,04,45,120,,05,30,200,,09,60,300,,12,15,050,")
            text += sentence("GPRMC,\(time),V,,,,,,,291126,,")
        }
        // 2026-11-29T12:00:00Z
        truth[(1_795_953_600 + UInt64(epoch)) * 1_000_000_000] = (latitude, longitude, fix)
    }
    return (text, truth)
}

@Suite("fieldcap --sensor gpsd, against a real gpsd fed by gpsfake", .serialized)
struct GNSSCommandTests {
    @Test(
        """
        no gpsd at the start (a clear line; the IMU records), then gpsd replaying a moving receiver \
        that loses its fix, stopped and started again: every fix recorded is the log's, the gaps \
        are in away, the offset from TOFF beside the sync point, and MCAP's NavSatFix the fixes'
        """
    )
    func gpsdReplay() throws {
        let work = freshPath("gnss")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let first = nmeaLog(epochs: 0..<25, noFix: Set(10..<15))
        let second = nmeaLog(epochs: 40..<55, noFix: [])
        try first.text.write(toFile: work + "/first.nmea", atomically: true, encoding: .utf8)
        try second.text.write(toFile: work + "/second.nmea", atomically: true, encoding: .utf8)
        let truth = first.truth.merging(second.truth) { a, _ in a }
        let port = Int.random(in: 20_000..<30_000)
        let out = work + "/session"
        var replays = 0
        let result = try FieldcapProcess.run(
            ["--imu", "synthetic:200", "--sensor", "gpsd:127.0.0.1:\(port),pps", "--duration", "15s", "--out", out]
        ) { _ in
            usleep(1_500_000)
            for (log, seconds) in [("first", 6.5), ("second", 4.5)] {
                // gpsfake starts its own gpsd on the port, which waits for a client (fieldcap tries
                // each second) and replays the log once, 50 ms a sentence (gpsd takes the first two
                // seconds' to know the receiver); it keeps gpsd up while a
                // client is connected, so it is stopped here, gpsd with it.
                let replay = Process()
                replay.executableURL = URL(fileURLWithPath: "/usr/bin/gpsfake")
                replay.arguments = ["-q", "-P", "\(port)", "-1", "-c", "0.05", "\(work)/\(log).nmea"]
                replay.standardOutput = FileHandle.nullDevice
                replay.standardError = FileHandle.nullDevice
                guard (try? replay.run()) != nil else { continue }
                replays += 1
                usleep(UInt32(seconds * 1e6))
                _ = try? runExecutable("/usr/bin/pkill", ["-KILL", "-f", "gpsfake -q -P \(port) "])
                _ = try? runExecutable("/usr/bin/pkill", ["-KILL", "-f", "gpsd .*-S \(port) "])
                replay.waitUntilExit()
                usleep(1_000_000)
            }
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(replays == 2)
        #expect(
            result.stderr.contains("gnss: no gpsd at 127.0.0.1:\(port)")
                && result.stderr.contains("trying again each second, the other streams record"), "\(result.stderr)")
        #expect(SessionValidator.validate(directory: out).problems.isEmpty)
        let streams = try #require(try sidecar(out)["streams"] as? [[String: Any]])
        let imu = try #require(streams.first { $0["id"] as? String == "imu0" })
        #expect((imu["written"] as? Int ?? 0) >= 2900)
        let gnss = try #require(streams.first { $0["id"] as? String == "gnss" })
        // Away at the start (no gpsd), between the replays, and after the second (on a busy
        // machine gpsd may close a connection once more): each gap but the last one closed.
        let away = try #require(gnss["away"] as? [[String: Any]])
        #expect(away.count >= 3, "\(away)")
        #expect(away.dropLast().allSatisfy { $0["returned_at"] is [String: Any] }, "\(away)")
        #expect(away.last?["returned_at"] is NSNull || away.last?["returned_at"] == nil, "\(away)")
        #expect((gnss["gnss"] as? [String: Any])?["connections"] as? Int ?? 0 >= 2)

        // Every fix with a time is the log's epoch at that time; both replays and the lost fix are there.
        let lines = try String(contentsOfFile: "\(out)/gnss.jsonl", encoding: .utf8).split(separator: "\n")
        var timed = 0
        var sawLostFix = false
        var sawSky: Set<String> = []
        var epochs: Set<UInt64> = []
        for line in lines {
            let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let channels = try #require(record["channels"] as? [String: Any])
            guard let time = (channels["time_ns"] as? NSNumber)?.uint64Value else { continue }
            let (latitude, longitude, fix) = try #require(truth[time], "a fix at \(time), not in the log")
            let mode = try #require(channels["mode"] as? Int)
            if fix && mode == 3 {
                #expect(abs((channels["lat"] as? Double ?? 0) - latitude) < 1e-6, "\(line)")
                #expect(abs((channels["lon"] as? Double ?? 0) - longitude) < 1e-6, "\(line)")
            }
            if !fix && mode == 1 {
                sawLostFix = true
                #expect(channels["lat"] == nil, "\(line)")
            }
            // The satellites of the last SKY: four in view, all used with a fix, none without.
            if let sky = channels["sky"] as? [String: Any], sky["nSat"] as? Int == 4 {
                if fix && mode == 3 && sky["uSat"] as? Int == 4 { sawSky.insert("used") }
                if !fix && mode == 1 && sky["uSat"] as? Int == 0 { sawSky.insert("unused") }
            }
            timed += 1
            epochs.insert(time)
        }
        #expect(sawLostFix, "no record without a fix")
        #expect(sawSky == ["used", "unused"], "\(sawSky)")
        #expect(epochs.contains { first.truth[$0] != nil } && epochs.contains { second.truth[$0] != nil })
        #expect(timed >= 12, "\(timed) fixes with a time")
        // TOFF: GNSS time (the log's 12:00) minus this host's clock, beside the sync point.
        let gnssTime = try #require(try sidecar(out)["gnss_time"] as? [String: Any])
        #expect(gnssTime["source"] as? String == "TOFF")
        #expect(((gnssTime["offsets"] as? [String: Any])?["TOFF"] as? [String: Any])?["count"] as? Int ?? 0 > 5)

        let mcap = work + "/run.mcap"
        let exported = try FieldcapProcess.run(["export", out, "--format", "mcap", "--out", mcap])
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect((exported.stdout + exported.stderr).contains("/gnss/fix (sensor_msgs/msg/NavSatFix)"))
        let verdict = try ExportCommandTests.judge(["mcap", out, mcap])
        #expect(verdict.passed, "\(verdict.output)")
    }
}
