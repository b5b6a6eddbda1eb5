import FieldcapCore
import Foundation
import Testing

@testable import FieldcapClockQuality

/// The parsers on what chrony 4.3's chronyc and linuxptp 3.1.1's pmc really printed (Recorded/).
struct RecordedOutputTests {
    static func recorded(_ name: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Recorded/\(name)")
        return try String(contentsOf: url, encoding: .utf8)
    }

    @Test func chronyFollowingASource() throws {
        let tracking = try #require(ChronyTracking(csv: Self.recorded("chronyc-tracking-synchronised.csv")))
        #expect(tracking.referenceId == "7F000001")
        #expect(tracking.referenceAddress == "127.0.0.1")
        #expect(tracking.stratum == 4)
        #expect(tracking.leapStatus == "Normal")
        #expect(tracking.synchronisedToSource)
        #expect(tracking.rootDelaySeconds == 0.000005837)
        #expect(tracking.rootDispersionSeconds == 0.000000499)
        // The bound chronyc's documentation gives: |offset| + dispersion + delay / 2.
        let bound = try #require(tracking.errorBoundSeconds)
        #expect(abs(bound - (0.000001445 + 0.000000499 + 0.000005837 / 2)) < 1e-15)
    }

    /// The CSV's sign against the human form of the same moment: "fast of NTP time" is a
    /// negative correction, so the sidecar's offset (system minus reference) is positive.
    @Test func chronySignMatchesTheHumanForm() throws {
        let human = try Self.recorded("chronyc-tracking-synchronised.txt")
        #expect(human.contains("System time     : 0.000001445 seconds fast of NTP time"))
        let tracking = try #require(ChronyTracking(csv: Self.recorded("chronyc-tracking-synchronised.csv")))
        #expect(tracking.systemTimeCorrectionSeconds == -0.000001445)
        let quality = ClockQuality(discipline: .chrony(tracking), readAtMonotonicRawNs: 2_000_000_000)
        let entry = quality.sidecarEntry(syncPointMonotonicNs: 1_500_000_000)
        let chrony = try #require(entry["chrony"]?.objectValue)
        #expect(chrony["system_time_offset_seconds"] == .double(0.000001445))
        #expect(entry["source"] == "chrony")
        #expect(entry["synchronised"] == true)
        #expect(entry["read_seconds_after_sync_point"] == .double(0.5))
        #expect(entry["error_bound_ns"] == .integer(4863))
    }

    @Test func chronyWithoutASource() throws {
        let tracking = try #require(ChronyTracking(csv: Self.recorded("chronyc-tracking-unsynchronised.csv")))
        #expect(tracking.leapStatus == "Not synchronised")
        #expect(tracking.referenceAddress == "")
        #expect(!tracking.synchronisedToSource)
        #expect(tracking.errorBoundSeconds == nil)
        #expect(tracking.notSynchronisedReason == "chronyd is not synchronised to any source")
    }

    /// `local stratum 3` alone: chronyd says Normal, but follows nothing; no bound.
    @Test func chronyServingItsOwnClock() throws {
        let tracking = try #require(ChronyTracking(csv: Self.recorded("chronyc-tracking-local-stratum.csv")))
        #expect(tracking.leapStatus == "Normal")
        #expect(tracking.referenceId == ChronyTracking.localReferenceId)
        #expect(tracking.errorBoundSeconds == nil)
        #expect(tracking.notSynchronisedReason?.contains("`local` directive") == true)
    }

    @Test func chronyRefusesWhatIsNotTracking() throws {
        #expect(ChronyTracking(csv: "") == nil)
        #expect(ChronyTracking(csv: "506 Cannot talk to daemon") == nil)
        #expect(ChronyTracking(csv: try Self.recorded("chronyc-tracking-synchronised.txt")) == nil)
        let line = try Self.recorded("chronyc-tracking-synchronised.csv")
        #expect(ChronyTracking(csv: line + line) == nil)
        #expect(ChronyTracking(csv: line.replacingOccurrences(of: ",Normal", with: "")) == nil)
        #expect(ChronyTracking(csv: line.replacingOccurrences(of: "-0.000001445", with: "nan")) == nil)
    }

    @Test func ptpSlaveLocked() throws {
        let status = try #require(PTPStatus(pmcOutput: Self.recorded("pmc-slave-multi-command.txt")))
        #expect(status.portState == "SLAVE")
        #expect(status.masterOffsetNs == -1620)
        #expect(status.meanPathDelayNs == 2291)
        #expect(status.stepsRemoved == 1)
        #expect(status.gmPresent == true)
        #expect(status.gmIdentity == "1e9dc3.fffe.c82b51")
        #expect(status.synchronised)
        #expect(status.errorBoundSeconds == (1620 + 2291) / 1e9)
    }

    /// The answers one question at a time, as pmc prints them, read together.
    @Test func ptpAnswersAskedSeparately() throws {
        let output = try [
            "pmc-slave-time-status-np.txt", "pmc-slave-port-data-set.txt", "pmc-slave-current-data-set.txt",
        ]
        .map(Self.recorded).joined()
        let status = try #require(PTPStatus(pmcOutput: output))
        #expect(status.masterOffsetNs == -235)
        #expect(status.meanPathDelayNs == 2295)
        #expect(status.portState == "SLAVE")
        #expect(status.synchronised)
    }

    @Test func ptpNotFollowingAMaster() throws {
        let master = try #require(
            PTPStatus(
                pmcOutput: Self.recorded("pmc-master-time-status-np.txt")
                    + Self.recorded("pmc-master-port-data-set.txt")))
        #expect(master.portState == "MASTER")
        #expect(master.gmPresent == false)
        #expect(master.errorBoundSeconds == nil)
        #expect(master.notSynchronisedReason == "ptp4l's port is MASTER, not following a master")
        let listening = try #require(
            PTPStatus(
                pmcOutput: Self.recorded("pmc-slave-time-status-np-listening.txt")
                    + Self.recorded("pmc-slave-port-data-set-listening.txt")))
        #expect(listening.portState == "LISTENING")
        #expect(!listening.synchronised)
    }

    /// No ptp4l at the socket: pmc prints only what it sent.
    @Test func ptpNoDaemon() throws {
        #expect(PTPStatus(pmcOutput: try Self.recorded("pmc-no-daemon.txt")) == nil)
        #expect(PTPStatus(pmcOutput: "") == nil)
    }

    @Test func sourceArguments() {
        #expect(ClockQualityReader.Source(argument: "auto") == .auto)
        #expect(ClockQualityReader.Source(argument: "none") == ClockQualityReader.Source.none)
        #expect(ClockQualityReader.Source(argument: "chrony") == .chrony(socket: nil))
        #expect(ClockQualityReader.Source(argument: "chrony:/run/c.sock") == .chrony(socket: "/run/c.sock"))
        #expect(ClockQualityReader.Source(argument: "ptp") == .ptp(socket: "/var/run/ptp4l"))
        #expect(ClockQualityReader.Source(argument: "ptp:/tmp/p") == .ptp(socket: "/tmp/p"))
        for bad in ["", "ntp", "chrony:relative", "auto:/x", "none:/x", "ptp:"] {
            #expect(ClockQualityReader.Source(argument: bad) == nil, "\(bad)")
        }
        #expect(ClockQualityReader.Source.chrony(socket: "/a").description == "chrony:/a")
    }
}
