import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Which physical device a node is, told apart as udev tells devices apart: a USB camera by the
/// port it is plugged into, what it says it is (vendor, product, serial) and which of its
/// interfaces and nodes; anything else by its place in sysfs. The node's number is no part of
/// it: the same camera plugged back in may come back as `/dev/video2`.
///
/// Read from sysfs (`of(videoNode:sysfs:)`, `of(iioDevice:sysfs:)`), kept while the device is
/// away, and matched against what sysfs holds later (`currentNode(sysfs:)`).
///
/// Thread-safe: a value.
public struct DeviceIdentity: Sendable, Equatable, CustomStringConvertible {
    /// The kernel subsystem of the node.
    public enum Subsystem: String, Sendable {
        /// `/dev/videoN`, `/sys/class/video4linux`.
        case video4linux
        /// `iio:deviceN`, `/sys/bus/iio/devices`.
        case iio
    }

    /// Where a USB device is plugged in and what it says it is, from its sysfs attributes
    /// (drivers/usb/core/sysfs.c).
    public struct USB: Sendable, Equatable {
        /// `busnum`: the host controller's bus.
        public var busNumber: Int
        /// `devpath`: the ports from the root hub down, `1` or `1.2` (a hub's port 2).
        public var portPath: String
        /// `idVendor`, `idProduct`: four hex digits each.
        public var vendorID: String
        public var productID: String
        /// `serial`, when the device has a serial number string.
        public var serial: String?
        /// `bInterfaceNumber` of the interface the node belongs to (uvcvideo: the video control
        /// interface), when the node hangs under one.
        public var interface: Int?
        /// Whether a camera in another port had the same vendor, product and serial when this
        /// was read (cheap cameras share one serial): then the serial does not name the camera,
        /// and only its port does.
        public var serialIsShared: Bool

        public init(
            busNumber: Int, portPath: String, vendorID: String, productID: String, serial: String? = nil,
            interface: Int? = nil, serialIsShared: Bool = false
        ) {
            self.busNumber = busNumber
            self.portPath = portPath
            self.vendorID = vendorID
            self.productID = productID
            self.serial = serial
            self.interface = interface
            self.serialIsShared = serialIsShared
        }

        /// Whether the serial names the camera wherever it is plugged in (udev's by-id link).
        var serialNamesIt: Bool { serial != nil && !serialIsShared }

        /// The kernel's name for the port: `1-1`, `1-1.2` (bus, then ports).
        public var port: String { "\(busNumber)-\(portPath)" }
        /// `1d6b:0104`.
        public var id: String { "\(vendorID):\(productID)" }
    }

    public var subsystem: Subsystem
    /// The node the identity was read from: `/dev/video0`, `iio:device0`.
    public var node: String
    /// For a video node, the device it belongs to (`/devices/platform/vivid.0`, or the USB
    /// interface `/devices/pci0000:00/…/1-1/1-1:1.0`); for an IIO device, its parent. Relative
    /// to the sysfs root.
    public var sysfsPath: String
    /// The bus of `sysfsPath` (`platform`, `usb`, `i2c`), for people; nil when sysfs has none.
    public var bus: String?
    /// Set when the device hangs under a USB device.
    public var usb: USB?
    /// A video node's `index`: which of its device's nodes it is (uvcvideo: 0 the capture node,
    /// 1 the metadata node). Nil for IIO.
    public var index: Int?
    /// The node's `name` attribute: a video device's card name, an IIO device's driver name.
    public var name: String?

    public init(
        subsystem: Subsystem, node: String, sysfsPath: String, bus: String? = nil, usb: USB? = nil,
        index: Int? = nil, name: String? = nil
    ) {
        self.subsystem = subsystem
        self.node = node
        self.sysfsPath = sysfsPath
        self.bus = bus
        self.usb = usb
        self.index = index
        self.name = name
    }

    /// Reads the identity of a V4L2 node from `sysfs`/class/video4linux.
    ///
    /// - Parameters:
    ///   - videoNode: `/dev/video0`, `video0`, or a link to the node (`/dev/v4l/by-id/…`).
    ///   - sysfs: the sysfs root; a test's tree in the tests.
    /// - Returns: nil when sysfs has no such node or its `device` link leads nowhere.
    public static func of(videoNode: String, sysfs: String = "/sys") -> DeviceIdentity? {
        var path = videoNode
        // A udev link names the node by where it is; sysfs knows it by the node's own name.
        if path.hasPrefix("/"), PathName.isSymbolicLink(path), let resolved = realPath(path) { path = resolved }
        let tree = SysfsTree(sysfs)
        let name = PathName.base(of: path)
        guard tree.exists("/class/video4linux/\(name)") else { return nil }
        return present(.video4linux, in: tree).first { $0.node == "/dev/\(name)" }
    }

    /// Reads the identity of an IIO device from `sysfs`/bus/iio/devices.
    ///
    /// - Parameters:
    ///   - iioDevice: `iio:device0`, `/dev/iio:device0`, or a name or label, found as libiio
    ///     0.24's `iio_context_find_device` finds it (and as `--imu` does): the first device,
    ///     by number, whose id, label or name it is.
    ///   - sysfs: the sysfs root; a test's tree in the tests.
    /// - Returns: nil when no IIO device answers to it.
    public static func of(iioDevice: String, sysfs: String = "/sys") -> DeviceIdentity? {
        let tree = SysfsTree(sysfs)
        let wanted = iioDevice.hasPrefix("/dev/") ? String(iioDevice.dropFirst(5)) : iioDevice
        for id in iioDeviceIDs(in: tree) {
            let directory = "/bus/iio/devices/\(id)"
            if id == wanted || tree.read("\(directory)/label") == wanted || tree.read("\(directory)/name") == wanted {
                return iio(id: id, in: tree)
            }
        }
        return nil
    }

    /// The node that holds this same device now (`/dev/videoN`, `iio:deviceN`), read from
    /// sysfs; nil when it is not back. The lowest-numbered, should two answer.
    ///
    /// The kernel lists a node in sysfs a little before devtmpfs makes its `/dev` file, and
    /// udevd sets its permissions later still: `HotplugWatcher.waitForReturn` waits for both.
    public func currentNode(sysfs: String = "/sys") -> String? {
        present(in: SysfsTree(sysfs)).first { $0.differs(from: self) == nil }?.node
    }

    /// The other nodes of the same device (the same sysfs device: a USB camera's control
    /// interface, under which `uvcvideo` registers every node of the camera), lowest number first.
    public func siblings(sysfs: String = "/sys") -> [DeviceIdentity] {
        present(in: SysfsTree(sysfs)).filter { $0.sysfsPath == sysfsPath && $0.node != node }
    }

    /// The node that now sits where this device sat, the same device or not: the same USB port,
    /// interface and node index, or the same sysfs device and index (IIO: the same parent). With
    /// `differs(from:)`, what lets a recorder say that a different camera took the port.
    public func occupant(sysfs: String = "/sys") -> DeviceIdentity? {
        present(in: SysfsTree(sysfs)).first { $0.isInSamePlace(as: self) }
    }

    /// Why this device is not `other`, in words (`serial 0002, not 0001`); nil when it is the
    /// same device. USB devices: the same vendor, product and serial, in any port (udev's by-id
    /// name), or without a serial the same port (by-path); and the same interface and node
    /// index. Others: the same sysfs path, node index and name.
    public func differs(from other: DeviceIdentity) -> String? {
        if subsystem != other.subsystem { return "a \(subsystem) device, not \(other.subsystem)" }
        switch (usb, other.usb) {
        case (let mine?, let theirs?):
            if mine.id != theirs.id { return "USB device \(mine.id), not \(theirs.id)" }
            if mine.serial != theirs.serial {
                return "serial \(mine.serial ?? "none"), not \(theirs.serial ?? "none")"
            }
            // A serial number names the camera wherever it is plugged in (udev's by-id link); a
            // camera without one, or with one another camera has too, is known by its port
            // (by-path).
            if mine.port != theirs.port && !(mine.serialNamesIt && theirs.serialNamesIt) {
                let why = mine.serial == nil ? "" : " (its serial is not its own: another camera has it)"
                return "USB port \(mine.port), not \(theirs.port)\(why)"
            }
            if mine.interface != theirs.interface {
                return "interface \(Self.spell(mine.interface)), not \(Self.spell(theirs.interface))"
            }
        case (nil, let theirs?):
            return "\(place), not USB port \(theirs.port)"
        case (let mine?, nil):
            return "USB port \(mine.port), not \(other.place)"
        case (nil, nil):
            if sysfsPath != other.sysfsPath { return "\(sysfsPath), not \(other.sysfsPath)" }
        }
        if index != other.index { return "node index \(Self.spell(index)), not \(Self.spell(other.index))" }
        // A USB camera's name is its product string, already told by the vendor and product.
        if usb == nil && name != other.name { return "name \(name ?? "none"), not \(other.name ?? "none")" }
        return nil
    }

    /// `USB 1-1 port 1, 1d6b:0104 serial FC0001, interface 0, node index 0`,
    /// `platform vivid.0, node index 0, name vivid-000-vid-cap`, `IIO bmi160 on i2c 1-0068`.
    public var description: String {
        var parts: [String] = []
        if let usb {
            parts.append("USB \(usb.port) port \(usb.portPath)")
            parts.append(usb.serial.map { "\(usb.id) serial \($0)" } ?? usb.id)
            if let interface = usb.interface { parts.append("interface \(interface)") }
        } else if subsystem == .iio {
            parts.append("IIO \(name ?? node) on \(place)")
        } else {
            parts.append(place)
        }
        if let index { parts.append("node index \(index)") }
        // What tells vivid's instances apart: one platform device, a V4L2 device each.
        if usb == nil && subsystem == .video4linux, let name { parts.append("name \(name)") }
        return parts.joined(separator: ", ")
    }

    /// The identity for a JSON sidecar, under stable keys: `subsystem`, `sysfs_path`, `usb_port`,
    /// `usb_id`, `serial`, `interface`, `index`, `name`; a key is left out when it does not apply.
    public var fields: [String: String] {
        var fields = ["subsystem": subsystem.rawValue, "sysfs_path": sysfsPath]
        if let usb {
            fields["usb_port"] = usb.port
            fields["usb_id"] = usb.id
            fields["serial"] = usb.serial
            fields["interface"] = usb.interface.map(String.init)
        }
        fields["index"] = index.map(String.init)
        fields["name"] = name
        return fields
    }

    /// `platform vivid.0`: the bus and the device's own name, or its path when sysfs has no bus.
    private var place: String {
        guard let bus else { return sysfsPath }
        return "\(bus) \(PathName.base(of: sysfsPath))"
    }

    private func isInSamePlace(as other: DeviceIdentity) -> Bool {
        guard subsystem == other.subsystem, index == other.index else { return false }
        if let mine = usb, let theirs = other.usb {
            return mine.port == theirs.port && mine.interface == theirs.interface
        }
        return usb == nil && other.usb == nil && sysfsPath == other.sysfsPath
    }

    private static func spell(_ number: Int?) -> String { number.map(String.init) ?? "none" }
}

extension DeviceIdentity {
    /// Every node of this identity's subsystem present now, lowest number first.
    fileprivate func present(in tree: SysfsTree) -> [DeviceIdentity] { Self.present(subsystem, in: tree) }

    /// Every node of `subsystem` present now, lowest number first, each USB camera's serial
    /// marked shared when a camera in another port has it too.
    fileprivate static func present(_ subsystem: Subsystem, in tree: SysfsTree) -> [DeviceIdentity] {
        switch subsystem {
        case .video4linux:
            let names = tree.list("/class/video4linux").filter { $0.hasPrefix("video") }
            var nodes = byNumber(names, after: "video").compactMap { video(named: $0, in: tree) }
            var ports: [String: Set<String>] = [:]
            for case let usb? in nodes.map(\.usb) where usb.serial != nil {
                ports["\(usb.id) \(usb.serial ?? "")", default: []].insert(usb.port)
            }
            for index in nodes.indices {
                guard let usb = nodes[index].usb, let serial = usb.serial else { continue }
                nodes[index].usb?.serialIsShared = (ports["\(usb.id) \(serial)"]?.count ?? 0) > 1
            }
            return nodes
        case .iio:
            return iioDeviceIDs(in: tree).compactMap { iio(id: $0, in: tree) }
        }
    }

    fileprivate static func video(named name: String, in tree: SysfsTree) -> DeviceIdentity? {
        let directory = "/class/video4linux/\(name)"
        guard let device = tree.resolve("\(directory)/device") else { return nil }
        return DeviceIdentity(
            subsystem: .video4linux, node: "/dev/\(name)", sysfsPath: device, bus: bus(of: device, in: tree),
            usb: usb(above: device, in: tree), index: tree.read("\(directory)/index").flatMap { Int($0) },
            name: tree.read("\(directory)/name"))
    }

    fileprivate static func iio(id: String, in tree: SysfsTree) -> DeviceIdentity? {
        // The class link leads to the device itself; what tells two IMUs of one driver apart is
        // where it hangs (the I2C or SPI device, the USB sensor hub).
        guard let device = tree.resolve("/bus/iio/devices/\(id)") else { return nil }
        let parent = PathName.directory(of: device)
        return DeviceIdentity(
            subsystem: .iio, node: id, sysfsPath: parent, bus: bus(of: parent, in: tree),
            name: tree.read("/bus/iio/devices/\(id)/name"))
    }

    /// `iio:deviceN` ids (triggers left out), lowest number first: the order of libiio's local
    /// context.
    fileprivate static func iioDeviceIDs(in tree: SysfsTree) -> [String] {
        byNumber(tree.list("/bus/iio/devices").filter { $0.hasPrefix("iio:device") }, after: "iio:device")
    }

    private static func byNumber(_ names: [String], after prefix: String) -> [String] {
        names.sorted { (Int($0.dropFirst(prefix.count)) ?? .max) < (Int($1.dropFirst(prefix.count)) ?? .max) }
    }

    private static func bus(of device: String, in tree: SysfsTree) -> String? {
        tree.resolve("\(device)/subsystem").map { PathName.base(of: $0) }
    }

    /// The USB device `device` hangs under: the nearest directory up the path with the
    /// attributes only a USB device (not an interface, not a root hub's controller) has.
    private static func usb(above device: String, in tree: SysfsTree) -> USB? {
        var child: String?
        var path = device
        while path != "/" && path != "/devices" && !path.isEmpty {
            if let busNumber = tree.read("\(path)/busnum").flatMap({ Int($0) }),
                let portPath = tree.read("\(path)/devpath"),
                let vendorID = tree.read("\(path)/idVendor"), let productID = tree.read("\(path)/idProduct")
            {
                // bInterfaceNumber is printed as two hex digits (drivers/usb/core/sysfs.c).
                let interface = child.flatMap { tree.read("\($0)/bInterfaceNumber") }.flatMap { Int($0, radix: 16) }
                return USB(
                    busNumber: busNumber, portPath: portPath, vendorID: vendorID, productID: productID,
                    serial: tree.read("\(path)/serial"), interface: interface)
            }
            child = path
            path = PathName.directory(of: path)
        }
        return nil
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
