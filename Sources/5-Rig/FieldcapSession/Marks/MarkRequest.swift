import FieldcapSegments

/// A mark as its maker asks for it (`fieldcap mark`, the API, a fleet, a GPIO line, a key), before
/// the recording stamps and keeps it (`MarkBook`).
public struct MarkRequest: Sendable, Equatable {
    public var label: String
    public var note: String?
    /// `command`, `api`, `fleet`, `key`, `gpio:CHIP:LINE`.
    public var source: String
    /// Seconds of the window before and after the instant; nil: the recording's defaults.
    public var beforeSeconds: Double?
    public var afterSeconds: Double?
    /// The instant, when it is not the moment the request arrives: `CLOCK_MONOTONIC_RAW` (a GPIO
    /// edge's kernel timestamp, mapped) ...
    public var atMonotonicRawNs: UInt64?
    /// ... or a wall-clock instant, UTC nanoseconds (a fleet's mark, the same instant on every
    /// rig), taken through this host's clocks as they read now.
    public var atWallClockNs: UInt64?
    /// The bound on `atMonotonicRawNs`, when it is known (a GPIO edge's).
    public var uncertaintyNs: UInt64?

    public init(
        label: String, note: String? = nil, source: String, beforeSeconds: Double? = nil, afterSeconds: Double? = nil
    ) {
        self.label = label
        self.note = note
        self.source = source
        self.beforeSeconds = beforeSeconds
        self.afterSeconds = afterSeconds
    }

    /// The longest label and note, in characters.
    public static let maxLabel = 200
    public static let maxNote = 2_000
    /// The longest window on either side: a day.
    public static let maxWindowSeconds = 86_400.0

    /// Throws, naming the field and what is wrong with it, unless each field is one a mark may
    /// carry: a label of one line of printable text, a note without control characters but line
    /// breaks, windows of 0 to a day.
    public func validate() throws(MarkRefusal) {
        if label.isEmpty || label.allSatisfy(\.isWhitespace) {
            throw MarkRefusal(
                .badRequest, "label: empty; a mark needs a label (what happened: near-miss, grasp-failed)")
        }
        if label.count > Self.maxLabel {
            throw MarkRefusal(.badRequest, "label: \(label.count) characters, more than \(Self.maxLabel)")
        }
        if let bad = Self.control(in: label, allowingLineBreaks: false) {
            throw MarkRefusal(.badRequest, "label: \(bad); a label is one line of printable text")
        }
        if let note {
            if note.count > Self.maxNote {
                throw MarkRefusal(.badRequest, "note: \(note.count) characters, more than \(Self.maxNote)")
            }
            if let bad = Self.control(in: note, allowingLineBreaks: true) {
                throw MarkRefusal(.badRequest, "note: \(bad); a note is printable text and line breaks")
            }
        }
        for (name, value) in [("before", beforeSeconds), ("after", afterSeconds)] {
            guard let value else { continue }
            guard value.isFinite, value >= 0, value <= Self.maxWindowSeconds else {
                throw MarkRefusal(.badRequest, "\(name): \(value) s; a window is 0 s to 24 h on either side")
            }
        }
    }

    /// The first control character in `text` (U+0000 to U+001F, U+007F to U+009F, the line and
    /// paragraph separators), named with its position, if there is one.
    static func control(in text: String, allowingLineBreaks: Bool) -> String? {
        for (position, scalar) in text.unicodeScalars.enumerated() {
            let value = scalar.value
            if allowingLineBreaks && (value == 0x0A || value == 0x0D || value == 0x09) { continue }
            if value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029 {
                let hex = String(value, radix: 16, uppercase: true)
                return "control character U+\(String(repeating: "0", count: max(0, 4 - hex.count)) + hex) "
                    + "at position \(position + 1)"
            }
        }
        return nil
    }
}

/// The windows a mark gets when its maker names none (`mark_before`, `mark_after` in the rig config).
public struct MarkWindows: Sendable, Equatable {
    public var beforeSeconds: Double
    public var afterSeconds: Double

    public init(beforeSeconds: Double = 30, afterSeconds: Double = 30) {
        self.beforeSeconds = beforeSeconds
        self.afterSeconds = afterSeconds
    }
}

/// Why a mark was not taken. `kind` maps to an HTTP status (400, 409).
public struct MarkRefusal: Error, CustomStringConvertible, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Something in the request itself (its label, its window).
        case badRequest
        /// The recording cannot take it now (none runs, the instant is outside it).
        case conflict
    }

    public var kind: Kind
    public var message: String
    public var description: String { message }

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}
