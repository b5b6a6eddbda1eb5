import ArgumentParser
import FieldcapCore
import FieldcapMedia
import Foundation
import SyncField

/// The `--cam` and `--imu` options, shared by `fieldcap record` and `fieldcap bench jitter`.
struct DeviceArguments: ParsableArguments {
    @Option(name: .customLong("cam"), help: ArgumentHelp("A camera (repeatable).", valueName: "SPEC"))
    var cameras: [String] = []

    @Option(name: .customLong("imu"), help: ArgumentHelp("An IMU (repeatable).", valueName: "SPEC"))
    var imus: [String] = []

    var specs: [DeviceSpec] {
        get throws {
            try cameras.map { try DeviceSpec(kind: .camera, argument: $0) } + imus.map { try DeviceSpec(kind: .imu, argument: $0) }
        }
    }

    var isEmpty: Bool { cameras.isEmpty && imus.isEmpty }
}

/// The devices a command records: from `--cam`/`--imu` or from a rig config.
struct DevicePlan {
    var specs: [DeviceSpec]

    /// Stream ids: `id=` where given, else cam0, cam1, ... and imu0, imu1, ...
    var streamIds: [String] {
        var cameraIndex = 0, imuIndex = 0
        return specs.map { spec in
            if let id = spec.options["id"] { return id }
            switch spec.kind {
            case .camera: defer { cameraIndex += 1 }; return "cam\(cameraIndex)"
            case .imu: defer { imuIndex += 1 }; return "imu\(imuIndex)"
            }
        }
    }

    /// Checks what can be checked without opening devices: something to capture, usable and
    /// distinct stream ids, synthetic sources' options.
    func validate(verb: String) throws {
        if specs.isEmpty {
            throw ValidationError("nothing to \(verb): give at least one --cam or --imu (try --cam synthetic --imu synthetic)")
        }
        var ids: Set<String> = []
        for (spec, id) in zip(specs, streamIds) {
            if let problem = StreamID.problem(with: id) {
                throw ValidationError("\(spec.label) \(spec.device.printable): stream id '\(id.printable)' cannot be used: \(problem)")
            }
            guard ids.insert(id).inserted else {
                let fix = spec.origin == nil ? "give each --cam and --imu its own id=" : "give each camera and IMU its own id"
                throw ValidationError("\(spec.origin.map { "\($0): " } ?? "")stream id '\(id.printable)' is used twice; \(fix)")
            }
            // Synthetic sources are checked here; devices, with their options, by makeSources,
            // whose errors are one line without the usage text.
            if spec.isSynthetic { _ = try spec.makeSource(defaultId: id) }
        }
    }

    /// Opens and sets up every device. A device that cannot be used as asked is one line on
    /// stderr and exit status 64 (a usage error), without the usage text.
    func makeSources() throws -> [CaptureSource] {
        do {
            return try zip(specs, streamIds).map { try $0.makeSource(defaultId: $1) }
        } catch {
            guard let message = (error as? DeviceSetupError)?.message ?? (error as? ValidationError)?.message else { throw error }
            FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
            throw ExitCode(64)
        }
    }
}

extension String {
    /// The text with control characters escaped (`\n`, `\u{7}`), so an error about it stays one line.
    var printable: String {
        String(unicodeScalars.map { $0.properties.generalCategory == .control ? $0.escaped(asASCII: true) : String($0) }.joined())
    }
}
