import ArgumentParser

/// `--mark-gpio`, as `fieldcap record` and `fieldcap serve` both take it.
struct MarkGPIOOption: ParsableArguments {
    @Option(
        name: .customLong("mark-gpio"),
        help: ArgumentHelp(
            "A GPIO line whose rising edge marks the recording (repeatable; `fieldcap mark --help`): "
                + "CHIP:LINE with the line's offset or name, and label=, before=, after=, debounce= (50ms).",
            valueName: "CHIP:LINE[,label=L]"))
    var lines: [String] = []
}
