import ArgumentParser
import FieldcapBench
import FieldcapCore

struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Prove the timestamp estimator in a simulation with a known truth, against peers' strategies.",
        discussion: """
            Simulates a kernel clock slewed up to 500 ppm against CLOCK_MONOTONIC_RAW and
            changing during the run, dequeue delays with a realistic body and rare
            multi-millisecond stalls, and missing samples, for a 30 fps camera and a 1 kHz
            IMU, each under four clock scenarios: steady; a +500 ppm frequency step (an
            NTP update, adjtimex -f); chrony slewing an offset at its maximum 83,333 ppm
            (adjtimex -t); and the kernel PLL slewing a 0.5 s offset with a rate that
            steps every second (adjtimex -o).

            Each strategy stamps the same samples: fieldcap's (a clock pair read at every
            dequeue, mapping the kernel timestamp), periodic clock pairs (what fieldcap
            did before), a one-way hull estimator (for clocks that cannot be read), a
            one-time offset measured at start (ROS usb_cam), ffmpeg's delay-locked loop
            (on arrival times, and on clock reads as -ts mono2abs), and dequeue stamping
            (the SyncField iOS SDK). The tables give each strategy's error against the
            truth, how many samples fell outside the bound it wrote beside them
            (uncertainty_ns; the SDK writes 5 ms), and ratios to fieldcap's error.
            """)

    @Option(help: "The simulation's random seed (the same seed gives the same tables).")
    var seed: UInt64 = 1

    @Option(
        help: ArgumentHelp(
            "Only this clock scenario: steady, step500, chrony, pll (default: all four).", valueName: "NAME"))
    var scenario: String?

    func validate() throws {
        if let scenario, Self.scenarios[scenario] == nil {
            throw ValidationError(
                "--scenario \(scenario) is not one of: \(Self.scenarios.keys.sorted().joined(separator: ", "))")
        }
    }

    static let scenarios: [String: TimestampSimulation.ClockScenario] = [
        "steady": .steady, "step500": .frequencyStep500, "chrony": .chronySlew, "pll": .kernelPLLSlew,
    ]

    func run() {
        let chosen = scenario.flatMap { Self.scenarios[$0] }.map { [$0] } ?? TimestampSimulation.ClockScenario.allCases
        for source in [TimestampSimulation.Configuration.camera(), .imu()] {
            for scenario in chosen {
                let configuration = source.with(scenario)
                let results = TimestampSimulation.run(configuration, seed: seed)
                print(TimestampSimulation.report(configuration, seed: seed, results: results))
            }
        }
    }
}
