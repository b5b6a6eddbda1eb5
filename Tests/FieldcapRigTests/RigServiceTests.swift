import FieldcapCore
import FieldcapRig
import FieldcapSession
import Foundation
import SyncField
import Synchronization
import Testing

/// The rig as a program of its own drives it, without HTTP: what `serve`, the capture-server
/// client and the fleet each call (#45). Only the public API: this is docs/library.md's example.
@Suite("A rig without HTTP")
struct RigServiceTests {
    @Test("start, its started and stopped events, the status, a second start refused, stop")
    func rigOnCommand() async throws {
        let root = NSTemporaryDirectory() + "rig-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let rig = try RigService(
            base: .init(
                config: nil,
                devices: [
                    try DeviceSpec(kind: .camera, argument: "synthetic:160x120@15"),
                    try DeviceSpec(kind: .imu, argument: "synthetic:100"),
                ],
                overrides: .init(hostId: "rig_01", root: root, minFree: ByteSize(bytes: 0))))
        #expect(rig.devices.map(\.kind) == ["video", "sensor"])
        #expect(rig.status.state == "idle")

        let events = rig.events.watch()
        var heard = events.makeAsyncIterator()
        let directory = try await rig.start(.init(duration: nil))
        #expect(rig.status.state == "recording")
        #expect(rig.recordingDirectory == directory)
        await #expect(throws: RigService.Refusal.self) { try await rig.start(.init()) }

        guard case .started(let started)? = await heard.next() else {
            Issue.record("the first event is not `started`")
            return
        }
        #expect(started == directory)
        // The recording's thread samples the status once a second.
        var status: RecordingStatus?
        for _ in 0..<50 where status == nil {
            try await Task.sleep(for: .milliseconds(100))
            status = rig.status.status
        }
        #expect(status?.streams.map(\.id).sorted() == ["cam0", "imu0"])

        let stopped = try await rig.stop("test")
        #expect(stopped.directory == directory)
        #expect(stopped.reason == "test")
        #expect(stopped.error == nil)
        #expect(stopped.streams.allSatisfy { $0.written > 0 }, "\(stopped.streams)")
        #expect(rig.status.state == "idle")
        #expect(rig.status.last?.directory == directory)
        while let event = await heard.next() {
            if case .stopped(let event) = event {
                #expect(event.directory == directory)
                break
            }
        }
        #expect(SessionValidator.validate(directory: directory).isValid)
        await rig.shutdown("test over")
    }

    @Test("a disk below twice the minimum free is told once, after `started`: the recording goes on")
    func diskLow() async throws {
        let root = NSTemporaryDirectory() + "rig-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        // A minimum of 60% of what is free: below twice it from the start, above it throughout.
        let free = try #require(freeBytes(at: root))
        let rig = try RigService(
            base: .init(
                config: nil, devices: [try DeviceSpec(kind: .imu, argument: "synthetic:100")],
                overrides: .init(hostId: "rig_01", root: root, minFree: ByteSize(bytes: free / 10 * 6))))
        let events = rig.events.watch()
        var heard = events.makeAsyncIterator()
        _ = try await rig.start(.init())
        guard case .started? = await heard.next() else {
            Issue.record("the first event is not `started`")
            return
        }
        guard case .diskLow(let told, let minFree)? = await heard.next() else {
            Issue.record("no disk_low after `started`")
            return
        }
        #expect(minFree == free / 10 * 6)
        #expect(told < 2 * minFree && told >= minFree)
        #expect(rig.status.state == "recording")
        let stopped = try await rig.stop("test")
        #expect(stopped.reason == "test")
        await rig.shutdown("test over")
    }

    /// A check that says what it was given, as the program's real one (FieldcapSyncCheck) would
    /// say an offset.
    final class RecordingCheck: SyncChecker {
        let checked = Mutex<[String]>([])
        func checkAndSave(directory: String) throws -> (session: String, entry: SyncCheckEntry) {
            checked.withLock { $0.append(directory) }
            return (
                directory,
                SyncCheckEntry(
                    checkedUtc: "2026-11-29T10:00:00Z", window: 0...1, windowChoice: "whole", windowIMU: nil, pairs: [])
            )
        }
    }

    @Test("check_sync: the check runs once the recording stopped and is told; without a check it is refused")
    func checkSyncAfterRecording() async throws {
        let root = NSTemporaryDirectory() + "rig-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let devices = [try DeviceSpec(kind: .imu, argument: "synthetic:100")]
        let overrides = RecordingSettings.Overrides(hostId: "rig_01", root: root, minFree: ByteSize(bytes: 0))
        let check = RecordingCheck()
        let rig = try RigService(base: .init(config: nil, devices: devices, overrides: overrides, syncChecker: check))
        let events = rig.events.watch()
        var heard = events.makeAsyncIterator()
        var request = RigService.StartRequest()
        request.checkSync = true
        let directory = try await rig.start(request)
        _ = try await rig.stop("test")
        var checked: SyncCheckedEvent?
        while checked == nil, let event = await heard.next() {
            if case .syncChecked(let event) = event { checked = event }
        }
        #expect(checked?.directory == directory && checked?.entry != nil && checked?.error == nil)
        #expect(check.checked.withLock { $0 } == [directory])
        // Not asked (the service's default is off): not checked.
        _ = try await rig.start(.init())
        _ = try await rig.stop("test")
        try await Task.sleep(for: .milliseconds(300))
        #expect(check.checked.withLock { $0 }.count == 1)
        // Asked, but SIGTERM ends it (the service shuts down): not begun, told as not done.
        let last = try await rig.start(request)
        await rig.shutdown("test over")
        var told: SyncCheckedEvent?
        while told == nil, let event = await heard.next() {
            if case .syncChecked(let event) = event { told = event }
        }
        #expect(told?.directory == last && told?.entry == nil, "\(String(describing: told))")
        #expect(told?.error?.contains("fieldcap was shutting down; run `fieldcap check-sync --save") == true)
        #expect(check.checked.withLock { $0 }.count == 1)

        // A rig given no check refuses a start that asks for one, before opening anything.
        let bare = try RigService(base: .init(config: nil, devices: devices, overrides: overrides))
        await #expect(throws: RigService.Refusal.self) { try await bare.start(request) }
        #expect(bare.status.state == "idle")
        await bare.shutdown("test over")
    }
}
