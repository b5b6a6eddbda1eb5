import FieldcapCore
import FieldcapGPIO

/// `--mark-gpio` and the config's `mark_gpio`, as written.
extension GPIOMarkSpec {
    public static let keys = ["label", "before", "after", "debounce"]

    /// `CHIP:LINE[,label=L][,before=D][,after=D][,debounce=D]`.
    public static func parse(_ text: String) throws(GPIOError) -> GPIOMarkSpec {
        var parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let target = parts.removeFirst()
        guard let colon = target.lastIndex(of: ":"), colon != target.startIndex,
            target.index(after: colon) != target.endIndex
        else {
            throw GPIOError(
                "'\(text.printable)': give CHIP:LINE, as gpiochip0:17 or gpiochip0:mark-in (gpioinfo lists them)")
        }
        let chip = String(target[..<colon])
        var spec = GPIOMarkSpec(
            chipPath: chip.hasPrefix("/") ? chip : "/dev/\(chip)", line: String(target[target.index(after: colon)...]),
            label: "gpio", text: text)
        if !spec.chipPath.hasPrefix("/dev/gpiochip") || spec.chipPath.contains("..") {
            throw GPIOError("'\(text.printable)': \(chip.printable) is not a GPIO chip (gpiochip0, or /dev/gpiochip0)")
        }
        for part in parts {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, Self.keys.contains(pair[0]) else {
                throw GPIOError(
                    "'\(text.printable)': '\(part.printable)' is not an option; options: \(Self.keys.joined(separator: ", "))"
                )
            }
            switch pair[0] {
            case "label": spec.label = pair[1]
            case "debounce":
                guard let span = pair[1] == "0" ? TimeSpan(seconds: 0) : TimeSpan(pair[1], maximumSeconds: 10) else {
                    throw GPIOError(
                        "'\(text.printable)': debounce=\(pair[1].printable): give 0 or a duration up to 10s (50ms)")
                }
                spec.debounceNs = UInt64(span.seconds * 1e9)
            default:
                let seconds = ["0", "0s"].contains(pair[1]) ? 0 : TimeSpan(pair[1], maximumSeconds: 86_400)?.seconds
                guard let seconds else {
                    throw GPIOError(
                        "'\(text.printable)': \(pair[0])=\(pair[1].printable): give 0 or a duration up to a day (30s)")
                }
                if pair[0] == "before" { spec.beforeSeconds = seconds } else { spec.afterSeconds = seconds }
            }
        }
        let request = MarkRequest(
            label: spec.label, source: spec.source, beforeSeconds: spec.beforeSeconds, afterSeconds: spec.afterSeconds)
        do throws(MarkRefusal) { try request.validate() } catch {
            throw GPIOError("'\(text.printable)': \(error.message)")
        }
        return spec
    }

}
