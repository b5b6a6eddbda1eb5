import Foundation

/// A sysfs tree in a temporary folder, laid out as the kernel lays out the real one: devices
/// under `devices/`, the class and bus folders as relative links into it, a node's `device` and a
/// device's `subsystem` as relative links (drivers/base/core.c), a USB device's attributes as
/// drivers/usb/core/sysfs.c prints them. Beside it, `dev/` for the nodes' files.
///
/// Thread-safe enough for the tests: each change is a few file operations another thread may
/// watch land in any order, as it would watch the kernel's.
final class FakeSysfs: @unchecked Sendable {
    let base: String
    var sysfs: String { "\(base)/sys" }
    var devices: String { "\(base)/dev" }
    private let files = FileManager.default

    init() {
        var template = Array("\(NSTemporaryDirectory())/fieldcap-hotplug-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed: errno \(errno)") }
        base = String(cString: made)
        for folder in ["sys/class/video4linux", "sys/bus/iio/devices", "sys/bus/usb", "sys/bus/platform", "dev"] {
            directory(folder)
        }
    }

    deinit { try? files.removeItem(atPath: base) }

    /// A UVC camera on dummy_hcd's bus: its USB device at `port` (`1`, `1.2`), its video control
    /// interface 0, and uvcvideo's nodes under it (`(video: 0, index: 0)` the capture node,
    /// `(video: 1, index: 1)` the metadata node). Without `file: false`, each node's `/dev` file.
    func plugUSBCamera(
        bus: Int = 1, port: String = "1", vendor: String = "1d6b", product: String = "0104", serial: String?,
        nodes: [(video: Int, index: Int)], file: Bool = true
    ) {
        let root = "devices/platform/dummy_hcd.\(bus - 1)/usb\(bus)"
        if !files.fileExists(atPath: "\(sysfs)/\(root)") {
            // The root hub: a USB device too (devpath 0), which the walk up must pass by.
            attributes(root, ["busnum": "\(bus)", "devpath": "0", "idVendor": "1d6b", "idProduct": "0002"])
        }
        let device = "\(root)/\(bus)-\(port)"
        var usb = ["busnum": "\(bus)", "devpath": port, "idVendor": vendor, "idProduct": product]
        usb["serial"] = serial
        attributes(device, usb)
        let interface = "\(device)/\(bus)-\(port):1.0"
        attributes(interface, ["bInterfaceNumber": "00", "bInterfaceClass": "0e"])
        link("\(interface)/subsystem", to: "bus/usb")
        for node in nodes {
            videoNode(video: node.video, index: node.index, name: "fieldcap test camera", under: interface, file: file)
        }
    }

    /// vivid's capture node of instance `instance`: every instance (`n_devs`) hangs under the one
    /// platform device `vivid.0`, each its own V4L2 device, so each node is index 0 and only its
    /// name (`vivid-001-vid-cap`) tells them apart.
    func plugPlatformCamera(instance: Int, video: Int) {
        let device = "devices/platform/vivid.0"
        if !files.fileExists(atPath: "\(sysfs)/\(device)") {
            directory(device)
            link("\(device)/subsystem", to: "bus/platform")
        }
        videoNode(video: video, index: 0, name: String(format: "vivid-%03d-vid-cap", instance), under: device)
    }

    /// One node of a device, as a driver takes it away alone (vivid's instances share a device).
    func unplugNode(video: Int) {
        let link = "\(sysfs)/class/video4linux/video\(video)"
        guard let target = try? files.destinationOfSymbolicLink(atPath: link) else { return }
        try? files.removeItem(atPath: "\(sysfs)/class/video4linux/\(target)")
        try? files.removeItem(atPath: link)
        try? files.removeItem(atPath: "\(devices)/video\(video)")
    }

    /// An IIO device `iio:deviceN` under `parent` (`devices/platform/i2c-1/1-0068`).
    func plugIIODevice(number: Int, name: String, parent: String) {
        let id = "iio:device\(number)"
        attributes("\(parent)/\(id)", ["name": name, "dev": "250:\(number)"])
        link("bus/iio/devices/\(id)", to: "\(parent)/\(id)")
        touch("dev/\(id)")
    }

    /// What the kernel takes away when a device goes: its folders, its class links, its files.
    func unplug(_ device: String) {
        for folder in ["sys/class/video4linux", "sys/bus/iio/devices"] {
            for entry in (try? files.contentsOfDirectory(atPath: "\(base)/\(folder)")) ?? [] {
                let link = "\(base)/\(folder)/\(entry)"
                let target = (try? files.destinationOfSymbolicLink(atPath: link)) ?? ""
                if target.contains("/\(device)/") || target.hasSuffix("/\(device)") {
                    try? files.removeItem(atPath: link)
                    try? files.removeItem(atPath: "\(devices)/\(entry)")
                }
            }
        }
        try? files.removeItem(atPath: "\(sysfs)/\(device)")
    }

    /// The node's `/dev` file, as devtmpfs makes it a moment after sysfs lists the node.
    func touch(_ path: String) {
        guard files.createFile(atPath: "\(base)/\(path)", contents: Data()) else { fatalError("cannot create \(path)") }
    }

    private func videoNode(video: Int, index: Int, name: String, under device: String, file: Bool = true) {
        let node = "\(device)/video4linux/video\(video)"
        attributes(node, ["index": "\(index)", "name": name, "dev": "81:\(video)"])
        link("\(node)/device", to: device)
        link("class/video4linux/video\(video)", to: node)
        if file { touch("dev/video\(video)") }
    }

    private func attributes(_ directory: String, _ values: [String: String]) {
        self.directory(directory)
        for (name, value) in values {
            let path = "\(sysfs)/\(directory)/\(name)"
            guard files.createFile(atPath: path, contents: Data("\(value)\n".utf8)) else {
                fatalError("cannot write \(path)")
            }
        }
    }

    private func directory(_ path: String) {
        let full = path.hasPrefix("sys/") || path == "dev" ? "\(base)/\(path)" : "\(sysfs)/\(path)"
        do { try files.createDirectory(atPath: full, withIntermediateDirectories: true) } catch {
            fatalError("cannot make \(full): \(error)")
        }
    }

    /// A relative link at `path` to `target`, both under the sysfs root, as the kernel makes them.
    private func link(_ path: String, to target: String) {
        let depth = path.split(separator: "/").count - 1
        let relative = String(repeating: "../", count: depth) + target
        do { try files.createSymbolicLink(atPath: "\(sysfs)/\(path)", withDestinationPath: relative) } catch {
            fatalError("cannot link \(path): \(error)")
        }
    }
}
