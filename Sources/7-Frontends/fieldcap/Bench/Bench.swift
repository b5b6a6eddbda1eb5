import ArgumentParser

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure fieldcap itself: how good its timestamps are, on devices and in simulation.",
        subcommands: [Jitter.self, Simulate.self])
}
