import FieldcapHotplug
import Foundation
import Testing

@Suite("Which physical device a node is") struct DeviceIdentityTests {
    let usbDevice = "devices/platform/dummy_hcd.0/usb1/1-1"

    @Test("a UVC camera is its USB port, ids, serial, interface and node index")
    func usbCamera() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "FC0001", nodes: [(0, 0), (1, 1)])
        let identity = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        #expect(identity.subsystem == .video4linux)
        #expect(identity.node == "/dev/video0")
        #expect(identity.sysfsPath == "/\(usbDevice)/1-1:1.0")
        #expect(identity.bus == "usb")
        #expect(
            identity.usb
                == DeviceIdentity.USB(
                    busNumber: 1, portPath: "1", vendorID: "1d6b", productID: "0104", serial: "FC0001", interface: 0))
        #expect(identity.index == 0)
        #expect(identity.name == "fieldcap test camera")
        #expect(identity.description == "USB 1-1 port 1, 1d6b:0104 serial FC0001, interface 0, node index 0")
        #expect(
            identity.fields == [
                "subsystem": "video4linux", "sysfs_path": "/\(usbDevice)/1-1:1.0", "usb_port": "1-1",
                "usb_id": "1d6b:0104", "serial": "FC0001", "interface": "0", "index": "0",
                "name": "fieldcap test camera",
            ])
        #expect(DeviceIdentity.of(videoNode: "video0", sysfs: tree.sysfs) == identity)
        #expect(identity.currentNode(sysfs: tree.sysfs) == "/dev/video0")
    }

    @Test("a camera behind a hub keeps its whole port path")
    func behindAHub() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(bus: 2, port: "1.3", serial: nil, nodes: [(4, 0)])
        let identity = try #require(DeviceIdentity.of(videoNode: "/dev/video4", sysfs: tree.sysfs))
        #expect(identity.usb?.port == "2-1.3")
        #expect(identity.usb?.serial == nil)
        #expect(identity.description == "USB 2-1.3 port 1.3, 1d6b:0104, interface 0, node index 0")
        #expect(identity.fields["serial"] == nil)
    }

    @Test("the same camera plugged back in is found at its new node")
    func sameCameraBack() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "FC0001", nodes: [(0, 0), (1, 1)])
        let identity = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        tree.unplug(usbDevice)
        #expect(identity.currentNode(sysfs: tree.sysfs) == nil)
        tree.plugUSBCamera(serial: "FC0001", nodes: [(2, 0), (3, 1)])
        #expect(identity.currentNode(sysfs: tree.sysfs) == "/dev/video2")
        let back = try #require(DeviceIdentity.of(videoNode: "/dev/video2", sysfs: tree.sysfs))
        #expect(back.differs(from: identity) == nil)
    }

    @Test("a different camera in the same port is refused, with the reason")
    func differentCamera() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "0001", nodes: [(0, 0)])
        let identity = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        tree.unplug(usbDevice)
        tree.plugUSBCamera(serial: "0002", nodes: [(2, 0)])
        #expect(identity.currentNode(sysfs: tree.sysfs) == nil)
        let occupant = try #require(identity.occupant(sysfs: tree.sysfs))
        #expect(occupant.node == "/dev/video2")
        #expect(occupant.differs(from: identity) == "serial 0002, not 0001")

        tree.unplug(usbDevice)
        tree.plugUSBCamera(product: "0105", serial: "0001", nodes: [(2, 0)])
        #expect(identity.currentNode(sysfs: tree.sysfs) == nil)
        #expect(identity.occupant(sysfs: tree.sysfs)?.differs(from: identity) == "USB device 1d6b:0105, not 1d6b:0104")

        tree.unplug(usbDevice)
        tree.plugUSBCamera(serial: nil, nodes: [(2, 0)])
        #expect(identity.occupant(sysfs: tree.sysfs)?.differs(from: identity) == "serial none, not 0001")
    }

    @Test("a camera with a serial is found in another port; one without, or sharing its serial, is not")
    func anotherPort() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "0001", nodes: [(0, 0)])
        let identity = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        tree.unplug(usbDevice)
        tree.plugUSBCamera(port: "2", serial: "0001", nodes: [(1, 0)])
        #expect(identity.currentNode(sysfs: tree.sysfs) == "/dev/video1")

        // Without a serial, the port is all that names a camera.
        let bare = FakeSysfs()
        bare.plugUSBCamera(serial: nil, nodes: [(0, 0)])
        let portOnly = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: bare.sysfs))
        bare.unplug(usbDevice)
        bare.plugUSBCamera(port: "2", serial: nil, nodes: [(0, 0)])
        #expect(portOnly.currentNode(sysfs: bare.sysfs) == nil)
        #expect(portOnly.occupant(sysfs: bare.sysfs) == nil)
        let moved = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: bare.sysfs))
        #expect(moved.differs(from: portOnly) == "USB port 1-2, not 1-1")
    }

    @Test("two cameras with one serial are known by their ports: the one that stays is not the one that left")
    func sharedSerial() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "SN0001", nodes: [(0, 0)])
        tree.plugUSBCamera(port: "2", serial: "SN0001", nodes: [(1, 0)])
        let identity = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        #expect(identity.usb?.serialIsShared == true)
        tree.unplug(usbDevice)
        #expect(identity.currentNode(sysfs: tree.sysfs) == nil)
        let other = try #require(DeviceIdentity.of(videoNode: "/dev/video1", sysfs: tree.sysfs))
        #expect(
            other.differs(from: identity) == "USB port 1-2, not 1-1 (its serial is not its own: another camera has it)")
        // Back in its own port: found.
        tree.plugUSBCamera(serial: "SN0001", nodes: [(0, 0)])
        #expect(identity.currentNode(sysfs: tree.sysfs) == "/dev/video0")
    }

    @Test("the metadata node is not taken for the capture node")
    func metadataNode() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "FC0001", nodes: [(0, 0), (1, 1)])
        let capture = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        let metadata = try #require(DeviceIdentity.of(videoNode: "/dev/video1", sysfs: tree.sysfs))
        #expect(metadata.differs(from: capture) == "node index 1, not 0")
        tree.unplug(usbDevice)
        // The metadata node first: numbers are handed out as the driver registers its nodes.
        tree.plugUSBCamera(serial: "FC0001", nodes: [(2, 1), (3, 0)])
        #expect(capture.currentNode(sysfs: tree.sysfs) == "/dev/video3")
        #expect(metadata.currentNode(sysfs: tree.sysfs) == "/dev/video2")
    }

    @Test("a platform camera is its sysfs device, node index and name")
    func platformCamera() throws {
        let tree = FakeSysfs()
        tree.plugPlatformCamera(instance: 0, video: 0)
        tree.plugPlatformCamera(instance: 1, video: 1)
        let first = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        let second = try #require(DeviceIdentity.of(videoNode: "/dev/video1", sysfs: tree.sysfs))
        #expect(first.usb == nil)
        #expect(first.sysfsPath == "/devices/platform/vivid.0")
        #expect(first.description == "platform vivid.0, node index 0, name vivid-000-vid-cap")
        #expect(
            first.fields == [
                "subsystem": "video4linux", "sysfs_path": "/devices/platform/vivid.0", "index": "0",
                "name": "vivid-000-vid-cap",
            ])
        // vivid's instances share one platform device: the name tells them apart.
        #expect(second.differs(from: first) == "name vivid-001-vid-cap, not vivid-000-vid-cap")
        tree.unplugNode(video: 0)
        #expect(first.currentNode(sysfs: tree.sysfs) == nil)
        tree.plugPlatformCamera(instance: 0, video: 2)
        #expect(first.currentNode(sysfs: tree.sysfs) == "/dev/video2")
        #expect(second.currentNode(sysfs: tree.sysfs) == "/dev/video1")
        let elsewhere = DeviceIdentity(
            subsystem: .video4linux, node: "/dev/video9", sysfsPath: "/devices/platform/vivid.1", bus: "platform",
            index: 0, name: "vivid-000-vid-cap")
        #expect(elsewhere.differs(from: first) == "/devices/platform/vivid.1, not /devices/platform/vivid.0")
    }

    @Test("an IIO device is its name and its parent")
    func iioDevice() throws {
        let tree = FakeSysfs()
        let parent = "devices/platform/i2c-1/1-0068"
        tree.plugIIODevice(number: 0, name: "bmi160", parent: parent)
        tree.plugIIODevice(number: 1, name: "bmi160", parent: "devices/platform/i2c-1/1-0069")
        let identity = try #require(DeviceIdentity.of(iioDevice: "iio:device0", sysfs: tree.sysfs))
        #expect(identity.subsystem == .iio)
        #expect(identity.node == "iio:device0")
        #expect(identity.sysfsPath == "/\(parent)")
        #expect(identity.name == "bmi160")
        #expect(identity.fields == ["subsystem": "iio", "sysfs_path": "/\(parent)", "name": "bmi160"])
        #expect(identity.description == "IIO bmi160 on /\(parent)")
        // As --imu takes it: the node's path, or the name (the first device, by number, with it).
        #expect(DeviceIdentity.of(iioDevice: "/dev/iio:device0", sysfs: tree.sysfs) == identity)
        #expect(DeviceIdentity.of(iioDevice: "bmi160", sysfs: tree.sysfs) == identity)
        #expect(DeviceIdentity.of(iioDevice: "iio:device1", sysfs: tree.sysfs)?.differs(from: identity) != nil)
        #expect(DeviceIdentity.of(iioDevice: "adxl345", sysfs: tree.sysfs) == nil)

        tree.unplug(parent)
        #expect(identity.currentNode(sysfs: tree.sysfs) == nil)
        tree.plugIIODevice(number: 2, name: "bmi160", parent: parent)
        #expect(identity.currentNode(sysfs: tree.sysfs) == "iio:device2")
    }

    @Test("nothing back is nil")
    func nothingBack() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "FC0001", nodes: [(0, 0)])
        let identity = try #require(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs))
        tree.unplug(usbDevice)
        #expect(identity.currentNode(sysfs: tree.sysfs) == nil)
        #expect(identity.occupant(sysfs: tree.sysfs) == nil)
        #expect(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: tree.sysfs) == nil)
        #expect(DeviceIdentity.of(iioDevice: "iio:device0", sysfs: tree.sysfs) == nil)
        #expect(DeviceIdentity.of(videoNode: "/dev/video0", sysfs: "\(tree.base)/no-sysfs") == nil)
    }

    @Test("a node named by a udev link is read as the node it leads to")
    func udevLink() throws {
        let tree = FakeSysfs()
        tree.plugUSBCamera(serial: "FC0001", nodes: [(0, 0)])
        let link = "\(tree.base)/usb-fieldcap_test_camera_FC0001-video-index0"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "\(tree.devices)/video0")
        let identity = try #require(DeviceIdentity.of(videoNode: link, sysfs: tree.sysfs))
        #expect(identity.node == "/dev/video0")
        #expect(identity.usb?.serial == "FC0001")
    }
}
