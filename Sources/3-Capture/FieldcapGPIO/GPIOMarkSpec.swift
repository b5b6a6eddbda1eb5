import FieldcapCore

/// A GPIO line that marks the recording when it goes high (`--mark-gpio gpiochip0:17,label=button`):
/// the chip (`gpiochip0`, or its path), the line (its offset, or its name), and the marks' label,
/// windows and debounce.
public struct GPIOMarkSpec: Sendable, Equatable {
    /// `/dev/gpiochip0`.
    public var chipPath: String
    /// An offset (`17`) or a line's name (`mark-in`).
    public var line: String
    public var label: String
    public var beforeSeconds: Double?
    public var afterSeconds: Double?
    /// Edges closer than this to the one before are the same press (a button's bounce).
    public var debounceNs: UInt64
    /// As written, for errors.
    public var text: String

    public init(
        chipPath: String, line: String, label: String = "gpio", beforeSeconds: Double? = nil,
        afterSeconds: Double? = nil, debounceNs: UInt64 = 50_000_000, text: String
    ) {
        self.chipPath = chipPath
        self.line = line
        self.label = label
        self.beforeSeconds = beforeSeconds
        self.afterSeconds = afterSeconds
        self.debounceNs = debounceNs
        self.text = text
    }

    /// `gpio:gpiochip0:17`: the marks' source.
    public var source: String {
        let chip = chipPath.hasPrefix("/dev/") ? String(chipPath.dropFirst(5)) : chipPath
        return "gpio:\(chip):\(line)"
    }
}

/// A GPIO line that cannot be used, and what to do: one line naming it.
public struct GPIOError: Error, CustomStringConvertible, Equatable {
    public var message: String
    public var description: String { message }

    public init(_ message: String) { self.message = message }
}
