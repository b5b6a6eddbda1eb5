import FieldcapCore
import Foundation
import TestSupport
import Testing

@testable import FieldcapClockQuality

/// The reader against two real ptp4l (Live/ptp-pair.sh): the slave's answers, held against pmc's
/// own; the master's, which follows nobody.
struct LivePTPTests {
    @Test func aSlaveFollowingItsMaster() throws {
        let directory = "/tmp/fieldcap-ptp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/ptp4l") else {
            throw ExternalToolMissing(tool: "ptp4l", package: "linuxptp")
        }
        let pair = Process()
        pair.executableURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Live/ptp-pair.sh")
        pair.arguments = [directory]
        pair.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        pair.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try pair.run()
        defer {
            kill(pair.processIdentifier, SIGKILL)
            pair.waitUntilExit()
        }
        let slave = ClockQualityReader(source: .ptp(socket: "\(directory)/slave.sock"))
        var quality = slave.read()
        for _ in 0..<300 where !quality.synchronised {
            usleep(100_000)
            quality = slave.read()
        }
        let logs = (try? String(contentsOfFile: "\(directory)/slave.log", encoding: .utf8)) ?? ""
        try #require(quality.synchronised, "the slave never locked: \(quality.discipline) \(quality.notes) \(logs)")
        guard case .ptp(let status) = quality.discipline else {
            Issue.record("\(quality.discipline)")
            return
        }
        #expect(status.portState == "SLAVE")
        #expect(status.gmPresent == true)
        let bound = try #require(quality.errorBoundSeconds)
        // |offset from master| + mean path delay, under 100 ms (microseconds on an idle host;
        // scheduling on a loaded one adds to the software time stamps).
        #expect(bound > 0 && bound < 0.1, "bound \(bound)")
        #expect(bound == (Double(status.masterOffsetNs!.magnitude) + (status.meanPathDelayNs ?? 0)) / 1e9)
        // pmc's own answer, asked as a user would.
        let independent = try runTool(
            "pmc",
            ["-u", "-b", "0", "-s", "\(directory)/slave.sock", "-i", "\(directory)/pmc.client", "GET PARENT_DATA_SET"],
            package: "linuxptp")
        #expect(independent.output.contains(status.gmIdentity ?? "?"), "\(independent.output)")

        let master = ClockQualityReader(source: .ptp(socket: "\(directory)/master.sock")).read()
        guard case .ptp(let masterStatus) = master.discipline else {
            Issue.record("\(master.discipline) \(master.notes)")
            return
        }
        #expect(masterStatus.portState == "MASTER")
        #expect(!master.synchronised)
        #expect(
            master.sidecarEntry(syncPointMonotonicNs: 0)["not_synchronised"]
                == "ptp4l's port is MASTER, not following a master")
    }
}
