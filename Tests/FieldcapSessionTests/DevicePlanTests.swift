import FieldcapCore
import Foundation
import Testing

@testable import FieldcapSession

@Suite("Device plans")
struct DevicePlanTests {
    @Test("a command-line spec and a config entry with the same text mean the same device and options")
    func shortFormEverywhere() throws {
        let argument = try DeviceSpec(kind: .camera, argument: "synthetic:320x240@15,id=left")
        let config = try RigConfig.parse(
            """
            cameras:
              - device: synthetic:320x240@15
                id: left
            """, name: "rig.yaml")
        #expect(config.devices.count == 1)
        #expect(config.devices[0].device == argument.device)
        #expect(config.devices[0].options == argument.options)
        let source = try DevicePlan(specs: config.devices).makeSources()[0]
        #expect(source.descriptor.videoFormat?.width == 320)
        #expect(source.descriptor.nominalRate == 15)
        #expect(source.descriptor.id == "left")
    }

    @Test(
        """
        a config's intrinsics: a file beside the config, read when the \
        settings resolve, matched to the granted sizes; --intrinsics wins
        """
    )
    func configIntrinsics() throws {
        let directory = NSTemporaryDirectory() + "rig-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let camchain = """
            cam0:
              camera_model: pinhole
              intrinsics: [100, 101, 80, 60]
              distortion_model: none
              distortion_coeffs: []
              resolution: [160, 120]
            """
        try camchain.write(toFile: "\(directory)/camchain.yaml", atomically: true, encoding: .utf8)
        let config = try RigConfig.parse(
            """
            intrinsics: camchain.yaml,match=order
            cameras:
              - device: synthetic:160x120@15
                id: left
            """, name: "\(directory)/rig.yaml")
        let settings = try RecordingSettings.resolve(config: config, devices: [], overrides: .init())
        #expect(settings.intrinsics?.match == .order)
        #expect(settings.intrinsics?.name == "intrinsics (\(directory)/rig.yaml)")
        let sources = try settings.plan.makeSources()
        let calibration = try #require(try settings.controllerSettings(for: sources, out: "unused").calibration)
        #expect(calibration.cameras["left"]?.fx == 100)
        // By id, the file's cam0 is not the config's camera `left`: refused, naming the config.
        var byId = RecordingSettings.Overrides()
        byId.intrinsics = "\(directory)/camchain.yaml"
        let overridden = try RecordingSettings.resolve(config: config, devices: [], overrides: byId)
        let error = #expect(throws: PlanError.self) { try overridden.controllerSettings(for: sources, out: "unused") }
        #expect(error?.message.hasPrefix("--intrinsics: ") == true, "\(error?.message ?? "")")
    }

    @Test("options given beside the short form win over it")
    func optionsWin() throws {
        let spec = try DeviceSpec(kind: .camera, argument: "synthetic:320x240@15,fps=30")
        #expect(spec.options["fps"] == "30")
        #expect(spec.options["size"] == "320x240")
        let imu = try DeviceSpec(kind: .imu, argument: "synthetic:1000,rate=400")
        #expect(imu.options["rate"] == "400")
    }

    @Test(
        "preview_blur_faces and upload_blur_faces: true or false; anything else names its line and what to write",
        arguments: ["preview_blur_faces", "upload_blur_faces"])
    func blurFaces(key: String) throws {
        let rig = "cameras:\n  - device: synthetic:160x120@15\n"
        func read(_ config: RigConfig) -> Bool? {
            key == "preview_blur_faces" ? config.previewBlurFaces : config.uploadBlurFaces
        }
        #expect(read(try RigConfig.parse("\(key): true\n" + rig, name: "rig.yaml")) == true)
        #expect(read(try RigConfig.parse("\(key): false\n" + rig, name: "rig.yaml")) == false)
        #expect(read(try RigConfig.parse(rig, name: "rig.yaml")) == nil)
        let error = #expect(throws: RigConfigError.self) {
            try RigConfig.parse("\(key): yes\n" + rig, name: "rig.yaml")
        }
        #expect(error?.message.contains("rig.yaml:1") == true, "\(String(describing: error))")
        #expect(error?.message.contains("true") == true, "\(String(describing: error))")
    }

    @Test("a config entry's bad option names its own line, before any device is opened")
    func badOptionNamesLine() {
        let error = #expect(throws: RigConfigError.self) {
            try RigConfig.parse(
                """
                cameras:
                  - device: /dev/video0
                    fps: fast
                """, name: "rig.yaml")
        }
        #expect(
            error?.message.hasPrefix("rig.yaml:3: camera /dev/video0: fps 'fast'") == true, "\(error?.message ?? "")")
    }

    @Test("stamp= names which instant capture_ns is; another word is refused, naming the four")
    func stampOption() throws {
        for stamp in ["kernel", "exposure-start", "exposure-middle", "dequeue"] {
            #expect(try DeviceSpec(kind: .camera, argument: "/dev/video0,stamp=\(stamp)").stamp() == stamp)
        }
        #expect(try DeviceSpec(kind: .camera, argument: "/dev/video0").stamp() == "kernel")
        let error = #expect(throws: RigConfigError.self) {
            try RigConfig.parse(
                """
                cameras:
                  - device: /dev/video0
                    stamp: shutter
                """, name: "rig.yaml")
        }
        let message = error?.message ?? ""
        #expect(message.hasPrefix("rig.yaml:3: camera /dev/video0: stamp 'shutter'"), "\(message)")
        #expect(message.contains("exposure-middle"), "\(message)")
    }

    @Test(
        """
        motion= and delay= on a real camera or IMU are refused by a plan's check and a config's \
        parse, before any device is opened (as fieldcap check and serve's plan check read them)
        """
    )
    func syntheticMotionRefusedOnDevices() throws {
        for argument in ["/dev/video0,motion=hand", "/dev/video0,delay=5ms"] {
            let plan = DevicePlan(specs: [try DeviceSpec(kind: .camera, argument: argument)])
            let error = #expect(throws: PlanError.self) { try plan.validate(verb: "record") }
            #expect(error?.message.contains("motion, delay and fov are for synthetic sources") == true, "\(argument)")
        }
        for argument in ["iio:device0,motion=hand", "iio:device0,delay=5ms"] {
            let imu = DevicePlan(specs: [try DeviceSpec(kind: .imu, argument: argument)])
            let imuError = #expect(throws: PlanError.self) { try imu.validate(verb: "record") }
            #expect(imuError?.message.contains("motion, delay and fov are for synthetic sources") == true)
        }
        let configError = #expect(throws: RigConfigError.self) {
            try RigConfig.parse(
                """
                cameras:
                  - device: /dev/video0
                    motion: hand
                """, name: "rig.yaml")
        }
        #expect(
            configError?.message.hasPrefix("rig.yaml:3: camera /dev/video0: motion, delay and fov") == true,
            "\(configError?.message ?? "")")
        // The synthetic sources still take them; an IMU's delay only with its motion.
        try DevicePlan(specs: [
            try DeviceSpec(kind: .camera, argument: "synthetic:160x120,motion=hand,delay=5ms"),
            try DeviceSpec(kind: .imu, argument: "synthetic:100,motion=hand,delay=-12000ms"),
        ]).validate(verb: "record")
        let unturned = DevicePlan(specs: [try DeviceSpec(kind: .imu, argument: "synthetic:100,delay=5ms")])
        let unturnedError = #expect(throws: PlanError.self) { _ = try unturned.makeSources() }
        #expect(unturnedError?.message.contains("delay is for a turning IMU; give motion=hand") == true)
    }

    @Test("stream ids: given ones kept, the rest numbered per kind; a repeated id is refused")
    func streamIds() throws {
        let plan = DevicePlan(specs: [
            try DeviceSpec(kind: .camera, argument: "synthetic"), try DeviceSpec(kind: .imu, argument: "synthetic"),
            try DeviceSpec(kind: .camera, argument: "synthetic,id=side"),
            try DeviceSpec(kind: .camera, argument: "synthetic"),
        ])
        #expect(plan.streamIds == ["cam0", "imu0", "side", "cam1"])
        let twice = DevicePlan(specs: [
            try DeviceSpec(kind: .camera, argument: "synthetic,id=a"),
            try DeviceSpec(kind: .imu, argument: "synthetic,id=a"),
        ])
        let error = #expect(throws: PlanError.self) { try twice.validate(verb: "record") }
        #expect(error?.message.contains("used twice") == true)
    }

    @Test("a plan takes other factories: a front end or a test can add kinds of source")
    func otherFactories() throws {
        struct Nothing: SourceFactory {
            func takes(_ spec: DeviceSpec) -> Bool { spec.device == "nothing" }
            func check(_ spec: DeviceSpec) throws(PlanError) {}
            func make(_ spec: DeviceSpec, id: String) throws -> CaptureSource { SyntheticIMU(id: id, rate: 1) }
        }
        let plan = DevicePlan(specs: [try DeviceSpec(kind: .imu, argument: "nothing")], factories: [Nothing()])
        try plan.validate(verb: "record")
        #expect(try plan.makeSources()[0].descriptor.nominalRate == 1)
        let standard = DevicePlan(specs: [try DeviceSpec(kind: .imu, argument: "nothing")])
        #expect(throws: DeviceSetupError.self) { try standard.makeSources() }
    }

    @Test(
        "sizes and times read as people write them",
        arguments: [
            ("256M", UInt64(256 << 20), "256.0M"), ("1.25k", 1280, "1.2k"), ("0", 0, "0"), ("2G", 2 << 30, "2.0G"),
        ] as [(String, UInt64, String)])
    func quantities(text: String, bytes: UInt64, shown: String) {
        #expect(ByteSize(text)?.bytes == bytes)
        #expect(ByteSize(text)?.description == shown)
        #expect(TimeSpan("500ms")?.seconds == 0.5)
        #expect(TimeSpan("2h")?.seconds == 7200)
        #expect(TimeSpan("7d")?.seconds == 604_800)
        #expect(TimeSpan("8d") == nil)
        #expect(TimeSpan("-1s") == nil)
    }
}
