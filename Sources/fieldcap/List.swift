import ArgumentParser
import FieldcapCore
import FieldcapV4L2

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
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
                print("  \(node)  not usable: \(error)")
            }
        }
        print("""
              synthetic  moving colour-bar test pattern, YUYV; any even WIDTHxHEIGHT, any rate
                         --cam synthetic:1280x720@30,id=cam_left
            IMUs
              synthetic  \(SyntheticIMU.channelNames.joined(separator: ", ")) (m/s², rad/s); 1 to 100000 Hz
                         --imu synthetic:1000,id=imu
            IIO IMUs arrive with their issue; this build records V4L2 cameras and synthetic sources.
            """)
    }
}
