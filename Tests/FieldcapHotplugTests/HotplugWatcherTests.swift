import FieldcapHotplug
import FieldcapSystem
import Foundation
import Synchronization
import Testing

@Suite("Waking when a device comes back")
struct HotplugWatcherTests {
    let usbDevice = "devices/platform/dummy_hcd.0/usb1/1-1"

    @Test("with no monitor, a wait sleeps on the wake descriptor alone and says why in its summary")
    func rescanOnly() {
        let watcher = HotplugWatcher(subsystems: ["video4linux"], source: .rescanOnly(reason: "no netlink here"))
        #expect(watcher.mode == .rescan(reason: "no netlink here"))
        #expect(watcher.summary.contains("rescanning sysfs on a timer: no netlink here"))
        #expect(watcher.summary.contains("video4linux"))
        let started = Self.nowMs()
        #expect(watcher.waitForChange(orReadable: -1, timeoutMs: 60) == .timedOut)
        #expect(Self.nowMs() - started >= 50)
        let latch = Latch()
        #expect(watcher.waitForChange(orReadable: latch.descriptor, timeoutMs: 30) == .timedOut)
    }

    @Test("the wake descriptor ends a wait at once, monitor or not")
    func wakeEndsAWait() {
        let latch = Latch()
        latch.open()
        for watcher in [
            HotplugWatcher(subsystems: ["video4linux"]),
            HotplugWatcher(subsystems: ["iio"], source: .rescanOnly(reason: "test")),
        ] {
            let started = Self.nowMs()
            #expect(watcher.waitForChange(orReadable: latch.descriptor, timeoutMs: 10_000) == .woken)
            #expect(Self.nowMs() - started < 2_000, "\(watcher.summary)")
        }
    }

    @Test("the monitor opens from the source udevd's presence calls for, or says which call failed")
    func monitorOrReason() {
        let udevRuns = access("/run/udev/control", F_OK) == 0
        let watcher = HotplugWatcher(subsystems: ["video4linux", "iio"])
        switch watcher.mode {
        case .udev: #expect(udevRuns)
        case .kernel: #expect(!udevRuns)
        case .rescan(let reason): #expect(reason.hasPrefix("udev"), "\(reason)")
        }
        // Whether uevents reach this host (a container's network namespace gets none) is not
        // for the test to know: a look with no time must come back at once either way.
        let started = Self.nowMs()
        let change = watcher.waitForChange(orReadable: -1, timeoutMs: 0)
        #expect(change == .timedOut || change == .deviceEvent)
        #expect(Self.nowMs() - started < 1_000)

        let kernel = HotplugWatcher(subsystems: ["video4linux"], source: .kernel)
        if case .rescan(let reason) = kernel.mode { #expect(reason.contains("kernel"), "\(reason)") }
        #expect(kernel.mode != .udev)
    }

    @Test("waitForReturn takes the camera back when another thread plugs it in")
    func returnsWhenBack() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "FC0001", nodes: [(0, 0), (1, 1)])
        let identity = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        tree.unplug(usbDevice)
        let watcher = HotplugWatcher(subsystems: ["video4linux"], source: .rescanOnly(reason: "test"))
        let latch = Latch()
        let plugger = DedicatedThread(name: "fc-test-plug") { [tree] in
            Thread.sleep(forTimeInterval: 0.1)
            tree.plugUSBCamera(serial: "FC0001", nodes: [(2, 0), (3, 1)])
        }
        let started = Self.nowMs()
        let node = watcher.waitForReturn(
            of: identity, wake: latch.descriptor, isStopped: { latch.isOpen }, rescanEveryMs: 20, sysfs: tree.sysfs,
            devices: tree.devices)
        plugger.join()
        #expect(node == "/dev/video2")
        #expect(Self.nowMs() - started < 5_000)
    }

    @Test("waitForReturn waits for the node's file after sysfs lists the device")
    func waitsForTheFile() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "FC0001", nodes: [(0, 0)])
        let identity = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        tree.unplug(usbDevice)
        tree.plugUSBCamera(serial: "FC0001", nodes: [(2, 0)], file: false)
        let watcher = HotplugWatcher(subsystems: ["video4linux"], source: .rescanOnly(reason: "test"))
        let latch = Latch()
        let devtmpfs = DedicatedThread(name: "fc-test-devtmpfs") { [tree] in
            Thread.sleep(forTimeInterval: 0.3)
            tree.touch("dev/video2")
        }
        let started = Self.nowMs()
        let node = watcher.waitForReturn(
            of: identity, wake: latch.descriptor, isStopped: { latch.isOpen }, rescanEveryMs: 20, sysfs: tree.sysfs,
            devices: tree.devices)
        let elapsed = Self.nowMs() - started
        let fileThere = access("\(tree.devices)/video2", F_OK) == 0
        devtmpfs.join()
        #expect(node == "/dev/video2")
        #expect(fileThere)
        #expect(elapsed >= 250)
    }

    @Test("waitForReturn ends with nil once stopped, and tells once of a different camera in the port")
    func stops() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "0001", nodes: [(0, 0)])
        let identity = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        tree.unplug(usbDevice)
        tree.plugUSBCamera(serial: "0002", nodes: [(2, 0)])
        let watcher = HotplugWatcher(subsystems: ["video4linux"], source: .rescanOnly(reason: "test"))
        let latch = Latch()
        let stopper = DedicatedThread(name: "fc-test-stop") {
            Thread.sleep(forTimeInterval: 0.3)
            latch.open()
        }
        var told: [String] = []
        let started = Self.nowMs()
        let node = watcher.waitForReturn(
            of: identity, wake: latch.descriptor, isStopped: { latch.isOpen }, rescanEveryMs: 20, sysfs: tree.sysfs,
            devices: tree.devices, differentDevice: { told.append("\($0): \($1)") })
        stopper.join()
        #expect(node == nil)
        #expect(Self.nowMs() - started < 3_000)
        #expect(told == ["/dev/video2: serial 0002, not 0001"])
        // Stopped before it starts: no look at all.
        #expect(watcher.waitForReturn(of: identity, wake: latch.descriptor, isStopped: { true }) == nil)
    }

    @Test("waitForReturn wakes from a long rescan period when stopped")
    func stopEndsALongWait() throws {
        let tree = FakeSysfs()
        let identity = DeviceIdentity(subsystem: .iio, node: "iio:device0", sysfsPath: "/devices", name: "dummy0")
        let watcher = HotplugWatcher(subsystems: ["iio"])
        let latch = Latch()
        let stopper = DedicatedThread(name: "fc-test-stop") {
            Thread.sleep(forTimeInterval: 0.2)
            latch.open()
        }
        let started = Self.nowMs()
        let node = watcher.waitForReturn(
            of: identity, wake: latch.descriptor, isStopped: { latch.isOpen }, rescanEveryMs: 60_000,
            sysfs: tree.sysfs, devices: tree.devices)
        stopper.join()
        #expect(node == nil)
        #expect(Self.nowMs() - started < 5_000, "\(watcher.summary)")
    }

    static func nowMs() -> Int64 {
        var now = timespec()
        _ = clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
