import ArgumentParser
import FieldcapCore

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the cameras and IMUs fieldcap can record, with what each can do.")

    func run() {
        print("""
            Cameras
              synthetic        moving colour-bar test pattern, YUYV; any even WIDTHxHEIGHT, any rate
                               --cam synthetic:1280x720@30,id=cam_left
            IMUs
              synthetic        \(SyntheticIMU.channelNames.joined(separator: ", ")) (m/s², rad/s); 1 to 100000 Hz
                               --imu synthetic:1000,id=imu

            V4L2 cameras (/dev/video*) and IIO IMUs (iio:device*) are listed here once this build
            supports them.
            """)
    }
}
