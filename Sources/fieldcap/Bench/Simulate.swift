import ArgumentParser
import FieldcapCore

struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Prove the timestamp estimator in a simulation with a known truth, against peers' strategies.",
        discussion: """
            Simulates a kernel clock slewed up to 500 ppm against CLOCK_MONOTONIC_RAW and changing
            during the run, dequeue delays with a realistic body and rare multi-millisecond
            stalls, and missing samples, for a 30 fps camera and a 1 kHz IMU. Each strategy
            stamps the same samples: fieldcap's (bracketed clock pairs mapping the kernel
            timestamp), a one-way hull estimator (for clocks that cannot be read), a one-time
            offset measured at start (ROS usb_cam), ffmpeg's delay-locked loop (on arrival times,
            and on clock reads as -ts mono2abs), and dequeue stamping (the SyncField iOS SDK).
            The tables give each strategy's error against the truth, and ratios to fieldcap's.
            """)

    @Option(help: "The simulation's random seed (the same seed gives the same tables).")
    var seed: UInt64 = 1

    func run() {
        for configuration in [TimestampSimulation.Configuration.camera(), .imu()] {
            let results = TimestampSimulation.run(configuration, seed: seed)
            print(TimestampSimulation.report(configuration, seed: seed, results: results))
        }
    }
}
