import ArgumentParser

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure fieldcap itself: how good its timestamps are.",
        subcommands: [Jitter.self])
}
