import ArgumentParser
import FieldcapCore
import FieldcapEncode
import FieldcapIIO
import FieldcapV4L2
import FoundationEssentials
import Glibc

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Show the cameras and IMUs fieldcap can record, with what each can do.")

    @Option(help: ArgumentHelp("Where to look for /dev/video* nodes.", valueName: "DIR"))
    var devices: String = "/dev"

    func run() {
        print("Cameras")
        let nodes = V4L2Device.nodes(in: devices)
        if nodes.isEmpty { print("  (no /dev/video* nodes)") }
        for node in nodes {
            do {
                let device = try V4L2Device(path: node)
                let identity = device.identity
                print("  \(node)  \(identity.card)  driver \(identity.driver), bus \(identity.bus)")
                let stable = stableNames(for: node)
                if !stable.isEmpty { print("    stable names (for a rig config): \(stable.joined(separator: ", "))") }
                for format in device.formats() {
                    print("    \(format.fourcc)  \(format.description)\(format.compressed ? " (compressed)" : "")")
                    for size in format.sizes.prefix(12) { print("      \(size)") }
                    if format.sizes.count > 12 { print("      ... \(format.sizes.count - 12) more sizes") }
                }
                let controls = device.controls()
                if !controls.isEmpty {
                    print("    controls (--cam \(node),ctrl.NAME=VALUE):")
                    for control in controls { print("      \(control)") }
                }
            } catch {
                // A memory-to-memory codec is not a camera: it is listed under Encoders.
                if (try? V4L2CodecDevice(path: node)) != nil { continue }
                print("  \(node)  not usable: \(error)")
            }
        }
        print(
            """
              synthetic  moving colour-bar test pattern, YUYV; any even WIDTHxHEIGHT, any rate
                         --cam synthetic:1280x720@30,id=cam_left
            IMUs
            """)
        listIIO()
        print(
            """
              synthetic  \(SyntheticIMU.channelNames.joined(separator: ", ")) (m/s², rad/s); 1 to 100000 Hz
                         --imu synthetic:1000,id=imu
            Encoders (--cam ...,encode=CODEC)
            """)
        for encoder in VideoEncoders.software {
            let missing = VideoEncoders.unavailable(encoder.codec).map { "; NOT AVAILABLE: \($0)" } ?? ""
            print(
                "  \(encoder.codec)  \(encoder.library), software, from "
                    + "\(encoder.from.map(\.rawValue).joined(separator: ", "))\(missing)"
            )
        }
        let hardware = V4L2Encoders.all(in: devices)
        for encoder in hardware {
            let codecs = encoder.codes.map { code in
                HardwareEncoding.Codec.allCases.first { $0.fourcc == code }?.rawValue
                    ?? "\(code) (not used by fieldcap)"
            }
            print(
                "  \(codecs.joined(separator: ", "))  \(encoder.card) (\(encoder.driver)) at "
                    + "\(encoder.path), V4L2 hardware, from \(encoder.takes.joined(separator: ", "))"
            )
        }
        if hardware.isEmpty {
            print("  h264, hevc  no V4L2 hardware encoder on this machine (memory-to-memory nodes in \(devices))")
        }
        print("  raw   no encoder: frames stored losslessly as captured (the default)")
    }

    /// The links udev made to `node` in /dev/v4l/by-id (USB cameras: vendor, model, serial) and
    /// /dev/v4l/by-path (the port): names that survive a reboot or a replug, unlike videoN.
    private func stableNames(for node: String) -> [String] {
        guard let resolvedNode = realpath(node, nil) else { return [] }
        let target = String(cString: resolvedNode)
        free(resolvedNode)
        return ["\(devices)/v4l/by-id", "\(devices)/v4l/by-path"].flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted().compactMap { link in
                let path = "\(folder)/\(link)"
                guard let resolved = realpath(path, nil) else { return nil }
                defer { free(resolved) }
                return String(cString: resolved) == target ? path : nil
            }
        }
    }

    private func listIIO() {
        let devices = IIODevice.all()
        if devices.isEmpty { print("  (no IIO devices)") }
        for (id, name) in devices {
            do {
                let device = try IIODevice(id)
                var facts = [device.hasBuffer ? "buffered capture" : "no buffer (cannot be recorded)"]
                if device.takesTrigger { facts.append("trigger: \(device.currentTrigger ?? "none attached")") }
                if let clock = device.timestampClock { facts.append("timestamp clock: \(clock)") }
                if let rate = device.samplingFrequency { facts.append("rate: \(rate) Hz") }
                print("  \(id)  \(name)  \(facts.joined(separator: ", "))")
                let available = device.samplingFrequenciesAvailable
                if !available.isEmpty { print("    rates: \(available.map { "\($0)" }.joined(separator: ", ")) Hz") }
                for channel in device.channels where !channel.isOutput {
                    var line = "    \(channel.id)"
                    if channel.id == "timestamp" {
                        line += "  (the sample's kernel timestamp)"
                    } else {
                        line += "  \(channel.kind.unit)"
                        if channel.scale != 1 { line += ", scale \(channel.scale)" }
                        if channel.offset != 0 { line += ", offset \(channel.offset)" }
                    }
                    line += channel.format.map { "  \($0)" } ?? (channel.isScanElement ? "" : "  (not bufferable)")
                    print(line)
                }
            } catch {
                print("  \(id)  \(name)  not usable: \(error)")
            }
        }
        let triggers = IIODevice.triggers()
        print(
            "  triggers: "
                + (triggers.isEmpty
                    ? "none (fieldcap makes an hrtimer trigger when configfs allows)"
                    : triggers.map { "\($0.name) (\($0.id))" }.joined(separator: ", ")))
        print("    --imu iio:device0,rate=1000  or  --imu NAME,channels=accel+anglvel,trigger=TRIGGER")
    }
}
