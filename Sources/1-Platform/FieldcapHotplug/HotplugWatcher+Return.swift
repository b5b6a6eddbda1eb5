import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

extension HotplugWatcher {
    /// Waits until the device `identity` names is back, for a capture thread whose device went
    /// away: looks at once, then after every event and every timeout, and returns the node that
    /// holds it now (`/dev/video2`, `iio:device1`), ready to open; nil once `isStopped()`.
    ///
    /// A node counts as ready once its `/dev` file exists (devtmpfs makes it a moment after sysfs
    /// lists the device; the kernel source looks a few more times over 200 ms) and, with udevd,
    /// once udevd's own event for it came, after its rules set the node's permissions. A device
    /// present at the first look, or at two looks in a row (udevd's event lost), is taken as is.
    ///
    /// The node may be the very one that just failed, when the driver has not yet taken it out
    /// of sysfs: a reopen that fails with ENODEV means wait again.
    ///
    /// - Parameters:
    ///   - identity: what the device was, read before it went.
    ///   - wake: readable once the capture should stop (a stop's `Latch`), or -1.
    ///   - isStopped: asked after every wake and look.
    ///   - rescanEveryMs: how often to look with no monitor (`.rescan`) or with udevd's (whose
    ///     events can be missing); with the kernel's, sysfs is still read every three times
    ///     that long, a net under events that were lost.
    ///   - sysfs: the sysfs root; `devices`: where the nodes' files are. Test trees in the tests.
    ///   - differentDevice: told once for each other device found in the device's place (a
    ///     different camera in the same port), with `differs(from:)`'s words; it is not taken.
    public func waitForReturn(
        of identity: DeviceIdentity, wake: Int32, isStopped: () -> Bool, rescanEveryMs: Int32 = 1000,
        sysfs: String = "/sys", devices: String = "/dev",
        differentDevice: ((_ node: String, _ reason: String) -> Void)? = nil
    ) -> String? {
        // The kernel's own events are not lost: sysfs is read every three periods, a net. With
        // udevd, a device whose udevd event did not come (udevd busy, or gone with its socket
        // left behind) is taken at the second look in a row: looked at every period.
        let period: Int32
        if case .kernel = mode { period = max(1, rescanEveryMs) &* 3 } else { period = max(1, rescanEveryMs) }
        var firstLook = true
        var previousLook: String?
        // The names udevd announced since the wait began: its rules have run on them.
        var announced: Set<String> = []
        var told: Set<String> = []
        while !isStopped() {
            if let node = identity.currentNode(sysfs: sysfs) {
                let name = PathName.base(of: node)
                switch mode {
                case .udev:
                    let settled = firstLook || previousLook == node || announced.contains(name)
                    if settled && Self.hasFile(name, identity.subsystem, sysfs: sysfs, devices: devices) { return node }
                case .kernel, .rescan:
                    if awaitFile(name, identity.subsystem, sysfs: sysfs, devices: devices, wake: wake) { return node }
                    if isStopped() { return nil }
                }
                previousLook = node
            } else {
                previousLook = nil
                if let differentDevice, let other = identity.occupant(sysfs: sysfs),
                    let reason = other.differs(from: identity), told.insert("\(other.node) \(reason)").inserted
                {
                    differentDevice(other.node, reason)
                }
            }
            firstLook = false
            switch waitForChange(orReadable: wake, timeoutMs: period) {
            case .deviceEvent:
                for event in lastEvents where event.action != "remove" && event.action != "unbind" {
                    announced.insert(event.name)
                }
            case .woken:
                // A wake that is not a stop must not spin the loop: the descriptor stays readable.
                if !isStopped() { Self.sleep(milliseconds: 10) }
            case .timedOut:
                break
            }
        }
        return nil
    }

    /// Whether the node's `/dev` file is there, looking again every 50 ms for 200 ms: the kernel
    /// lists a device in sysfs before devtmpfs has made its file.
    private func awaitFile(
        _ name: String, _ subsystem: DeviceIdentity.Subsystem, sysfs: String, devices: String, wake: Int32
    ) -> Bool {
        for attempt in 0..<5 {
            if Self.hasFile(name, subsystem, sysfs: sysfs, devices: devices) { return true }
            if attempt < 4 && Self.pause(wake: wake, timeoutMs: 50) { return false }
        }
        return false
    }

    /// Whether the node's file exists, or it has none to wait for (no `dev` attribute: an IIO
    /// device without buffer or events has no character device).
    private static func hasFile(
        _ name: String, _ subsystem: DeviceIdentity.Subsystem, sysfs: String, devices: String
    ) -> Bool {
        let directory =
            subsystem == .video4linux ? "\(sysfs)/class/video4linux/\(name)" : "\(sysfs)/bus/iio/devices/\(name)"
        guard access("\(directory)/dev", F_OK) == 0 else { return true }
        return access("\(devices)/\(name)", F_OK) == 0
    }
}
