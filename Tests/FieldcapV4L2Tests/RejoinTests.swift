import FieldcapCore
import SyncField
import Synchronization
import Testing

@testable import FieldcapV4L2

#if canImport(Glibc)
    import Glibc
#endif

/// A camera that goes away mid-stream and comes back, played by the scripted driver: the
/// stream goes on under the same id with its numbers running on, the time away is told, and a
/// camera that cannot be taken up as it was is refused, saying why. The kernel rig's UVC gadget
/// test unplugs a real one.
@Suite("V4L2 camera rejoining after an unplug")
struct RejoinTests {
    typealias Step = ScriptedCameraDriver.Step

    final class Asked: Sendable { let count = Atomic<Int>(0) }

    /// A rejoin that finds the camera back after `awayMs`, and counts how often it was asked.
    static func comingBack(afterMs awayMs: UInt32 = 30, maxReturns: Int = 10) -> (RejoinPolicy, Asked) {
        let asked = Asked()
        let policy = RejoinPolicy(maxReturns: maxReturns) { _, _ in
            asked.count.add(1, ordering: .relaxed)
            usleep(awayMs * 1_000)
            return DequeueLoopTests.path
        }
        return (policy, asked)
    }

    @Test("a camera that comes back goes on under the same stream: numbers run on, the gap is told, no drop")
    func comesBack() throws {
        let (policy, asked) = Self.comingBack()
        let before = (0..<5).map { Step.frame(sequence: UInt32($0)) }
        // The kernel counts from 0 again after a replug, and skips one frame afterwards.
        let after = [0, 1, 3].map { Step.frame(sequence: UInt32($0)) }
        let run = try DequeueLoopTests.run(before + [.dequeueFails(ENODEV)] + after, rejoin: policy)
        #expect(run.error == nil)
        #expect(run.records.map(\.sequence) == [0, 1, 2, 3, 4, 5, 6, 8])
        #expect(run.ring.drops.count == 0, "the time away is not drops")
        #expect(run.camera.sequenceGaps.droppedRuns == [7...7], "a gap after the return is the kernel's, counted")
        #expect(asked.count.load(ordering: .relaxed) == 1)
        #expect(run.driver.opens == 2)
        #expect(run.driver.closes >= 1, "the lost device is let go while away")
        let absences = try #require(run.camera.presence?.absences)
        try #require(absences.count == 1)
        let absence = absences[0]
        let returned = try #require(absence.returnedNs)
        #expect(returned - absence.leftNs >= 30_000_000)
        #expect(absence.returnedAs == DequeueLoopTests.path)
        #expect(absence.reason.contains("VIDIOC_DQBUF"))
        #expect(run.camera.presence?.isAway == false)
        // The frames before the gap end before it, those after start after it.
        #expect(run.records[4].captureNs <= absence.leftNs && run.records[5].captureNs >= returned)
        #expect(zip(run.records, run.records.dropFirst()).allSatisfy { $0.captureNs < $1.captureNs })
    }

    @Test("a node listed but refusing to open is looked at again after a pause, not in a spin, until it opens")
    func notBackYet() throws {
        let (policy, asked) = Self.comingBack(afterMs: 0)
        let started = MonotonicClock.now()
        let run = try DequeueLoopTests.run(
            [.frame(sequence: 0), .dequeueFails(ENODEV), .frame(sequence: 0)], rejoin: policy, failedReopens: 3)
        #expect(run.error == nil)
        #expect(run.records.map(\.sequence) == [0, 1])
        #expect(run.driver.opens == 5, "the first open, three refused, the one that worked")
        #expect(asked.count.load(ordering: .relaxed) == 4)
        let pauses = UInt64(3 * V4L2Camera.notBackPauseMs) * 1_000_000
        #expect(MonotonicClock.now() - started >= pauses, "a pause after each refused open")
    }

    @Test("a camera that flaps more often in a minute than rejoin allows ends its stream, saying so")
    func givesUp() throws {
        let (policy, _) = Self.comingBack(afterMs: 1, maxReturns: 1)
        let run = try DequeueLoopTests.run(
            [.frame(sequence: 0), .dequeueFails(ENODEV), .frame(sequence: 0), .dequeueFails(ENODEV)],
            until: { _, finished in finished }, rejoin: policy)
        let error = try #require(run.deviceError)
        #expect(error.code == .gone)
        #expect(error.hint.contains("come back 1 times within a minute"), "\(error)")
        #expect(run.records.map(\.sequence) == [0, 1])
        #expect(run.camera.presence?.absences.count == 1)
    }

    @Test("another camera in its place is not taken up: the stream ends and the refusal says why")
    func anotherCamera() throws {
        let (policy, _) = Self.comingBack(afterMs: 1)
        let run = try DequeueLoopTests.run(
            [.frame(sequence: 0), .frame(sequence: 1), .dequeueFails(ENODEV)], until: { _, finished in finished },
            rejoin: policy, anotherCameraAfterReopen: true)
        let error = try #require(run.deviceError)
        #expect(error.operation == "rejoin")
        #expect(error.hint.contains("another camera came back"), "\(error)")
        let absence = try #require(run.camera.presence?.absences.first)
        #expect(absence.returnedNs == nil)
        #expect(absence.refusal?.contains("other scripted camera") == true)
        #expect(run.records.count == 2)
    }

    @Test("the same camera back on another bus (moved to another port) is taken up, and the move noted")
    func anotherPort() throws {
        let (policy, _) = Self.comingBack(afterMs: 1)
        let run = try DequeueLoopTests.run(
            [.frame(sequence: 0), .dequeueFails(ENODEV), .frame(sequence: 0)],
            until: { driver, _ in driver.remaining == 0 }, rejoin: policy, movedAfterReopen: true)
        #expect(run.deviceError == nil)
        #expect(run.records.map(\.sequence) == [0, 1])
        let absence = try #require(run.camera.presence?.absences.first)
        #expect(absence.returnedNs != nil)
        #expect(absence.notes.contains { $0.contains("usb-scripted-2, not usb-scripted-1") }, "\(absence.notes)")
    }

    @Test("a camera back with other modes is not taken up: the stream ends and the refusal names both")
    func otherModes() throws {
        let (policy, _) = Self.comingBack(afterMs: 1)
        let run = try DequeueLoopTests.run(
            [.frame(sequence: 0), .dequeueFails(ENODEV)], until: { _, finished in finished }, rejoin: policy,
            widthAfterReopen: 320)
        let error = try #require(run.deviceError)
        #expect(error.operation == "rejoin" && error.code == .unsupported, "\(error)")
        let refusal = try #require(run.camera.presence?.absences.first?.refusal)
        #expect(refusal.contains("320x480") && refusal.contains("640x480"), "\(refusal)")
        #expect(run.driver.closes >= 2, "the lost device and the refused one are both closed")
    }

    @Test("the lost camera's buffers are not let go while the writer holds them; a stop then ends cleanly")
    func writerHoldsBuffers() throws {
        let (policy, asked) = Self.comingBack(afterMs: 0)
        let settled = MonotonicClock.now() + 300_000_000
        let run = try DequeueLoopTests.run(
            [.frame(sequence: 0), .frame(sequence: 1), .dequeueFails(ENODEV), .frame(sequence: 0)], release: false,
            until: { driver, _ in driver.remaining == 1 && MonotonicClock.now() > settled }, rejoin: policy)
        #expect(run.error == nil)
        #expect(run.records.count == 2, "the frames the writer holds were handed over before the loss")
        #expect(asked.count.load(ordering: .relaxed) == 0, "not waited for while its buffers are at the writer")
        #expect(run.driver.opens == 1)
        #expect(run.camera.presence?.isAway == true)
    }

    @Test("a stop while the camera is away ends the stream cleanly, with the absence still open")
    func stoppedWhileAway() throws {
        let policy = RejoinPolicy { stop, _ in
            while !stop.wait(milliseconds: 10) {}
            return nil
        }
        let run = try DequeueLoopTests.run(
            [.frame(sequence: 0), .frame(sequence: 1), .dequeueFails(ENODEV)], rejoin: policy)
        #expect(run.error == nil)
        #expect(run.records.count == 2)
        let presence = try #require(run.camera.presence)
        #expect(presence.isAway)
        #expect(presence.absences.count == 1 && presence.absences[0].returnedNs == nil)
        #expect(run.driver.opens == 1)
    }

    @Test("without rejoin a lost camera ends its stream as before, and tells no presence")
    func withoutRejoin() throws {
        let run = try DequeueLoopTests.run([.frame(sequence: 0), .dequeueFails(ENODEV)])
        #expect(run.deviceError?.code == .gone)
        #expect(run.camera.presence == nil)
    }

    @Test("an absence is worth the records its length holds at the nominal rate, within a session's bounds")
    func recordsWorth() {
        let closed = Absence(leftNs: 1_000_000_000, reason: "gone", returnedNs: 3_000_000_000)
        #expect(closed.recordsWorth(rate: 30, untilNs: .max) == 60)
        // Over a segment boundary each segment counts its own part: 1 s + 1 s, not 2 s twice.
        #expect(closed.recordsWorth(rate: 30, untilNs: 2_000_000_000) == 30)
        #expect(closed.recordsWorth(rate: 30, fromNs: 2_000_000_000, untilNs: 4_000_000_000) == 30)
        #expect(closed.recordsWorth(rate: 30, fromNs: 3_500_000_000, untilNs: 4_000_000_000) == 0)
        let open = Absence(leftNs: 1_000_000_000, reason: "gone")
        #expect(open.recordsWorth(rate: 30, untilNs: 1_500_000_000) == 15)
        #expect(open.overlaps(startNs: 5_000_000_000, endNs: 6_000_000_000))
        #expect(!closed.overlaps(startNs: 3_000_000_001, endNs: 6_000_000_000))
    }
}
