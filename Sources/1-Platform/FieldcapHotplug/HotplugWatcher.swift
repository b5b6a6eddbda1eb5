import CUdev
import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Wakes when a device of some subsystems comes or goes, through libudev's netlink monitor:
/// udevd's events once its rules have run where udevd runs, the kernel's own uevents where it
/// does not (a rig with devtmpfs and no udevd). Where neither can be had it says so in `mode`,
/// and its waits only sleep: the caller rescans sysfs on a timer.
///
/// Threading: thread-bound. It holds libudev's monitor, which libudev does not lock: make it on
/// one thread and hand it to the one that waits (the capture thread), one owner at a time.
public final class HotplugWatcher: @unchecked Sendable {
    /// Where the events come from.
    public enum Mode: Sendable, Equatable {
        /// udevd's events, sent after its rules ran (permissions, links).
        case udev
        /// The kernel's uevents, as the driver adds the device, before any rule runs.
        case kernel
        /// No events: the caller rescans on a timer. `reason` names the call that failed and its
        /// errno, for one log line.
        case rescan(reason: String)
    }

    /// Which monitor to open.
    public enum Source: Sendable, Equatable {
        /// udevd's when it runs (`/run/udev/control` exists), else the kernel's.
        case automatic
        case udev
        case kernel
        /// None: `mode` is `.rescan` with this reason.
        case rescanOnly(reason: String)
    }

    /// What ended a wait.
    public enum Change: Sendable, Equatable {
        /// Events of the subsystems came (all of them were read), or some were lost (the socket's
        /// buffer overflowed): rescan.
        case deviceEvent
        /// The wake descriptor became readable.
        case woken
        /// Nothing within the time.
        case timedOut
    }

    /// One event the monitor passed on.
    public struct Event: Sendable, Equatable, CustomStringConvertible {
        /// `add`, `remove`, `bind`, `unbind`, `change`, `move`.
        public var action: String
        public var subsystem: String
        /// The kernel's name for the device: `video2`, `iio:device0`.
        public var name: String
        /// `/dev/video2`, when the device has a node.
        public var node: String?

        public var description: String { "\(action) \(subsystem) \(name)" }
    }

    public let subsystems: [String]
    public let mode: Mode
    /// The events of the last wait that ended in `.deviceEvent` (the newest 64 at most).
    public private(set) var lastEvents: [Event] = []
    /// Every event passed on since the watcher was made.
    public private(set) var eventCount = 0

    private let udev: OpaquePointer?
    private let monitor: OpaquePointer?
    private let descriptor: Int32

    /// Opens the monitor; never throws. A monitor that cannot be opened leaves `mode` at
    /// `.rescan` with the reason.
    ///
    /// - Parameters:
    ///   - subsystems: the kernel subsystems to hear: `["video4linux"]`, `["iio"]`.
    ///   - source: `.automatic` but in tests.
    ///
    /// The corresponding C calls are `udev_monitor_new_from_netlink`,
    /// `udev_monitor_filter_add_match_subsystem_devtype` and `udev_monitor_enable_receiving`.
    public init(subsystems: [String], source: Source = .automatic) {
        self.subsystems = subsystems
        let name: String
        switch source {
        case .rescanOnly(let reason):
            (udev, monitor, descriptor, mode) = (nil, nil, -1, .rescan(reason: reason))
            return
        case .udev: name = "udev"
        case .kernel: name = "kernel"
        case .automatic:
            // libudev quietly disables a udev-source monitor when udevd does not run (its events
            // would never come): the kernel's own are then the only ones.
            name = access("/run/udev/control", F_OK) == 0 ? "udev" : "kernel"
        }
        switch Self.open(source: name, subsystems: subsystems) {
        case .success(let opened):
            (udev, monitor, descriptor) = opened
            mode = name == "udev" ? .udev : .kernel
        case .failure(let failure):
            (udev, monitor, descriptor, mode) = (nil, nil, -1, .rescan(reason: failure.reason))
        }
    }

    deinit {
        // The monitor owns the socket: unref closes it.
        if let monitor { udev_monitor_unref(monitor) }
        if let udev { udev_unref(udev) }
    }

    /// One line for the log: where the events come from, or why there are none.
    public var summary: String {
        let what = subsystems.joined(separator: ", ")
        switch mode {
        case .udev: return "hotplug: udev events for \(what)"
        case .kernel: return "hotplug: the kernel's uevents for \(what) (no udevd: /run/udev/control is absent)"
        case .rescan(let reason): return "hotplug: no device events for \(what), rescanning sysfs on a timer: \(reason)"
        }
    }

    /// Waits until events of the subsystems come, `wake` becomes readable, or `timeoutMs` pass.
    /// Events of other subsystems, which the kernel source hands up and libudev filters, do not
    /// end it. With no monitor (`.rescan`) it only waits on `wake`.
    ///
    /// - Parameters:
    ///   - wake: a descriptor that is readable once the wait should end (a stop's `Latch`), or -1.
    ///   - timeoutMs: 0 looks and returns.
    /// - Returns: `.woken` before `.deviceEvent` when both hold: a stop wins.
    ///
    /// The corresponding C calls are `poll` and `udev_monitor_receive_device`.
    public func waitForChange(orReadable wake: Int32, timeoutMs: Int32) -> Change {
        let deadline = Self.nowMs() + Int64(max(0, timeoutMs))
        while true {
            let left = Int32(clamping: max(0, deadline - Self.nowMs()))
            guard let monitor else { return Self.pause(wake: wake, timeoutMs: left) ? .woken : .timedOut }
            let node = DeviceNode(descriptor: descriptor, calls: KernelDeviceCalls())
            guard case .success(let ready) = node.poll(events: Int16(POLLIN), orReadable: wake, timeoutMs: left) else {
                // A poll that fails (ENOMEM) sleeps the time out instead, so a loop of waits cannot spin.
                Self.sleep(milliseconds: left)
                return .timedOut
            }
            if ready.otherReadable { return .woken }
            if ready.node != 0 && drain(monitor) { return .deviceEvent }
            if left == 0 { return .timedOut }
        }
    }

    /// Reads every pending event; whether any passed the filter or some were lost.
    private func drain(_ monitor: OpaquePointer) -> Bool {
        var events: [Event] = []
        while true {
            errno = 0
            // libudev reads until a message passes the filter, and returns nil with EAGAIN once
            // the socket is empty (the descriptor is non-blocking).
            guard let device = udev_monitor_receive_device(monitor) else {
                let code = errno
                if !events.isEmpty {
                    lastEvents = events.suffix(64)
                    eventCount += events.count
                }
                // ENOBUFS: the kernel dropped messages the buffer had no room for; the caller
                // must look again, as after an event.
                return !events.isEmpty || (code != 0 && code != EAGAIN && code != EINTR)
            }
            defer { udev_device_unref(device) }
            events.append(
                Event(
                    action: udev_device_get_action(device).map { String(cString: $0) } ?? "",
                    subsystem: udev_device_get_subsystem(device).map { String(cString: $0) } ?? "",
                    name: udev_device_get_sysname(device).map { String(cString: $0) } ?? "",
                    node: udev_device_get_devnode(device).map { String(cString: $0) }))
        }
    }

    private static func open(
        source: String, subsystems: [String]
    ) -> Result<(OpaquePointer, OpaquePointer, Int32), OpenFailure> {
        errno = 0
        guard let udev = udev_new() else { return .failure(OpenFailure(reason: "udev_new: \(Errno.current)")) }
        errno = 0
        guard let monitor = udev_monitor_new_from_netlink(udev, source) else {
            let reason = "udev_monitor_new_from_netlink(\(source)): \(Errno.current)"
            udev_unref(udev)
            return .failure(OpenFailure(reason: reason))
        }
        func fail(_ reason: String) -> Result<(OpaquePointer, OpaquePointer, Int32), OpenFailure> {
            udev_monitor_unref(monitor)
            udev_unref(udev)
            return .failure(OpenFailure(reason: reason))
        }
        // libudev's calls return a negative errno.
        for subsystem in subsystems {
            let code = udev_monitor_filter_add_match_subsystem_devtype(monitor, subsystem, nil)
            if code < 0 {
                return fail("udev_monitor_filter_add_match_subsystem_devtype(\(subsystem)): \(Errno(-code))")
            }
        }
        let code = udev_monitor_enable_receiving(monitor)
        if code < 0 { return fail("udev_monitor_enable_receiving(\(source)): \(Errno(-code))") }
        let descriptor = udev_monitor_get_fd(monitor)
        if descriptor < 0 { return fail("udev_monitor_get_fd(\(source)): \(Errno(-descriptor))") }
        // libudev opens it non-blocking already; a receive that blocked would hold the capture
        // thread past its stop, so make sure.
        let flags: Int32
        switch SystemCall.valueOrErrno({ fcntl(descriptor, F_GETFL) }) {
        case .success(let value): flags = value
        case .failure(let error): return fail("fcntl(F_GETFL) on the \(source) monitor: \(error)")
        }
        if case .failure(let error) = SystemCall.valueOrErrno({ fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }) {
            return fail("fcntl(F_SETFL, O_NONBLOCK) on the \(source) monitor: \(error)")
        }
        return .success((udev, monitor, descriptor))
    }

    /// Why the monitor could not be had: the call, the source and the errno.
    struct OpenFailure: Error {
        var reason: String
    }

    /// Sleeps up to `timeoutMs` on `wake` alone; whether it became readable.
    static func pause(wake: Int32, timeoutMs: Int32) -> Bool {
        if wake < 0 {
            sleep(milliseconds: timeoutMs)
            return false
        }
        let node = DeviceNode(descriptor: wake, calls: KernelDeviceCalls())
        switch node.poll(events: Int16(POLLIN), timeoutMs: timeoutMs) {
        case .success(let ready):
            precondition(ready.node & Int16(POLLNVAL) == 0, "hotplug: the wake descriptor \(wake) is not open")
            return ready.node != 0
        case .failure:
            sleep(milliseconds: timeoutMs)
            return false
        }
    }

    static func sleep(milliseconds: Int32) {
        var request = timespec(tv_sec: Int(milliseconds / 1000), tv_nsec: Int(milliseconds % 1000) * 1_000_000)
        _ = SystemCall.retryingInterruptedCode { clock_nanosleep(CLOCK_MONOTONIC, 0, &request, nil) }
    }

    static func nowMs() -> Int64 {
        var now = timespec()
        _ = clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
