import FieldcapGPIO
import FieldcapOutput
import FieldcapSegments
import Foundation
import SyncField
import Synchronization
import Testing

@testable import FieldcapSession

/// Marks as the rig takes them: checked, stamped, numbered, kept; their lines in `events.ndjson`.
@Suite struct MarkBookTests {
    /// A keeper that keeps in memory, and can refuse.
    final class Keeper: MarkKeeper, @unchecked Sendable {
        var kept: [Mark] = []
        var startNs: UInt64? = 1_000
        var refuse: MarkRefusal?
        var marks: [Mark] { kept }
        func wallClockNs(ofMonotonicRawNs ns: UInt64) -> UInt64? { 1_800_000_000_000_000_000 + ns }
        func keep(_ mark: Mark) throws(MarkRefusal) -> [String] {
            if let refuse { throw refuse }
            kept.append(mark)
            return kept.count > 2 ? ["too many"] : []
        }
    }

    /// The refusal `body` throws, nil when it throws none.
    func refusal(_ body: () throws -> Any) -> MarkRefusal? {
        do {
            _ = try body()
            return nil
        } catch { return error as? MarkRefusal }
    }

    @Test func marksAreStampedNumberedAndGivenTheDefaultWindows() throws {
        let keeper = Keeper()
        let book = MarkBook(keeper: keeper, windows: MarkWindows(beforeSeconds: 30, afterSeconds: 10))
        let first = try book.mark(MarkRequest(label: "  near-miss ", source: "command"), nowNs: 5_000)
        #expect(first.mark.id == "m1")
        #expect(first.mark.label == "near-miss")
        #expect(first.mark.captureNs == 5_000)
        #expect(first.mark.beforeSeconds == 30 && first.mark.afterSeconds == 10)
        #expect(first.mark.wallClockNs == 1_800_000_000_000_005_000)
        #expect(first.mark.utc == SyncPoint.isoDatetime(wallClockNs: 1_800_000_000_000_005_000))
        var asked = MarkRequest(label: "grasp", note: "cup slipped", source: "gpio:gpiochip0:3", beforeSeconds: 2)
        asked.atMonotonicRawNs = 4_000
        let second = try book.mark(asked, nowNs: 6_000)
        #expect(second.mark.id == "m2" && second.mark.captureNs == 4_000)
        #expect(second.mark.beforeSeconds == 2 && second.mark.afterSeconds == 10)
        #expect(second.mark.note == "cup slipped" && second.mark.source == "gpio:gpiochip0:3")
        #expect(try book.mark(MarkRequest(label: "third", source: "api"), nowNs: 7_000).warnings == ["too many"])
        #expect(book.marks.map(\.id) == ["m1", "m2", "m3"])
    }

    @Test func aRefusedMarkTakesNoNumber() throws {
        let keeper = Keeper()
        let book = MarkBook(keeper: keeper, windows: MarkWindows())
        keeper.refuse = MarkRefusal(.badRequest, "too wide")
        #expect(throws: MarkRefusal(.badRequest, "too wide")) {
            try book.mark(MarkRequest(label: "a", source: "api"), nowNs: 5_000)
        }
        keeper.refuse = nil
        #expect(try book.mark(MarkRequest(label: "b", source: "api"), nowNs: 5_000).mark.id == "m1")
    }

    @Test func marksInALoopAreHeldToTwentyAtOnceAndFiveASecond() throws {
        let book = MarkBook(keeper: Keeper(), windows: MarkWindows())
        let start = MonotonicClock.now()
        for _ in 0..<20 { _ = try book.mark(MarkRequest(label: "loop", source: "api"), nowNs: start) }
        #expect(
            refusal { try book.mark(MarkRequest(label: "loop", source: "api"), nowNs: start) }?.message
                == "too many marks: at most 20 at once and 5 a second after")
        // A second later, five more.
        for _ in 0..<5 { _ = try book.mark(MarkRequest(label: "loop", source: "api"), nowNs: start + 1_000_000_000) }
        #expect(
            refusal { try book.mark(MarkRequest(label: "loop", source: "api"), nowNs: start + 1_000_000_000) } != nil)
        #expect(book.marks.count == 25)
    }

    @Test func instantsOutsideTheRecordingAreRefusedWithWhy() {
        let keeper = Keeper()
        let book = MarkBook(keeper: keeper, windows: MarkWindows())
        var early = MarkRequest(label: "a", source: "fleet")
        early.atMonotonicRawNs = 500
        #expect(refusal { try book.mark(early, nowNs: 10_000) }?.message.contains("before the recording began") == true)
        var future = MarkRequest(label: "a", source: "fleet")
        future.atMonotonicRawNs = 10_000 + 3_000_000_000
        #expect(refusal { try book.mark(future, nowNs: 10_000) }?.message.contains("in the future") == true)
        keeper.startNs = nil
        #expect(refusal { try book.mark(MarkRequest(label: "a", source: "api"), nowNs: 10_000) }?.kind == .conflict)
    }

    @Test func aWallClockInstantIsTakenThroughThisHostsClocks() throws {
        let book = MarkBook(keeper: Keeper(), windows: MarkWindows())
        var request = MarkRequest(label: "fleet", source: "fleet")
        // One second ago by the wall clock is one second ago by CLOCK_MONOTONIC_RAW.
        let nowRaw = MonotonicClock.now()
        request.atWallClockNs = MonotonicClock.wallClockNs() - 1_000_000_000
        let mark = try book.mark(request, nowNs: nowRaw).mark
        let ago = Int64(nowRaw) - Int64(mark.captureNs)
        #expect(abs(ago - 1_000_000_000) < 50_000_000, "\(ago) ns ago")
    }

    @Test(
        "bad labels, notes and windows are refused, naming the field",
        arguments: [
            (MarkRequest(label: "", source: "api"), "label: empty"),
            (MarkRequest(label: "   ", source: "api"), "label: empty"),
            (MarkRequest(label: "bell\u{07}", source: "api"), "label: control character U+0007 at position 5"),
            (MarkRequest(label: "two\nlines", source: "api"), "label: control character U+000A at position 4"),
            (MarkRequest(label: "esc\u{1B}[31m", source: "api"), "label: control character U+001B"),
            (MarkRequest(label: "sep\u{2028}", source: "api"), "label: control character U+2028"),
            (MarkRequest(label: String(repeating: "x", count: 201), source: "api"), "label: 201 characters"),
            (MarkRequest(label: "a", note: "nul\u{00}", source: "api"), "note: control character U+0000"),
            (MarkRequest(label: "a", source: "api", beforeSeconds: -1), "before: -1.0 s"),
            (MarkRequest(label: "a", source: "api", afterSeconds: .nan), "after: nan s"),
            (MarkRequest(label: "a", source: "api", afterSeconds: 90_000), "after: 90000.0 s"),
        ])
    func badRequests(request: MarkRequest, message: String) {
        let refused = refusal { try request.validate() }
        #expect(refused?.kind == .badRequest)
        #expect(refused?.message.hasPrefix(message) == true, "\(String(describing: refused))")
    }

    @Test func aNoteMayHoldLineBreaksAndALabelAnyPrintableText() throws {
        try MarkRequest(label: "Greifer rutschte ab — ✋ 把手", note: "line one\nline two\ttab", source: "api").validate()
    }

    @Test func markLinesReadBackAndACutLineStaysWhole() throws {
        let directory = NSTemporaryDirectory() + "marks-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/\(MarkLine.fileName)"
        var first = Mark(
            id: "m1", label: "a \"quoted\" label/x", note: nil, source: "command", captureNs: 42,
            utc: "2026-11-30T00:00:00.000Z", beforeSeconds: 30, afterSeconds: 30.5)
        first.wallClockNs = 7
        try AppendFile.append(MarkLine.bytes(first), to: path)
        // A crash cut the next line off mid-way.
        let cut = Array(MarkLine.bytes(first).prefix(20))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(cut))
        handle.closeFile()
        var second = first
        second.id = "m2"
        try AppendFile.append(MarkLine.bytes(second), to: path)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        // The cut line kept as it was, on a line of its own; every byte accounted for.
        #expect(lines.count == 4)
        #expect(Array(lines[1]) == cut)
        #expect(MarkLine.marks(in: bytes) == [first, second])
        #expect(String(decoding: lines[0], as: UTF8.self).hasPrefix("{\"after_seconds\":30.5,"))
        #expect(String(decoding: lines[0], as: UTF8.self).contains("\"event\":\"mark\""))
    }

    @Test func gpioLinesAreWrittenChipColonLineWithOptions() throws {
        let spec = try GPIOMarkSpec.parse("gpiochip0:mark-in,label=button,before=10s,after=0,debounce=20ms")
        #expect(spec.chipPath == "/dev/gpiochip0" && spec.line == "mark-in" && spec.label == "button")
        #expect(spec.beforeSeconds == 10 && spec.afterSeconds == 0 && spec.debounceNs == 20_000_000)
        #expect(spec.source == "gpio:gpiochip0:mark-in")
        let bare = try GPIOMarkSpec.parse("/dev/gpiochip2:17")
        #expect(bare.chipPath == "/dev/gpiochip2" && bare.line == "17" && bare.label == "gpio")
        #expect(bare.debounceNs == 50_000_000 && bare.beforeSeconds == nil)
        for (text, says) in [
            ("gpiochip0", "give CHIP:LINE"), ("gpiochip0:", "give CHIP:LINE"), (":3", "give CHIP:LINE"),
            ("/etc/passwd:3", "is not a GPIO chip"), ("/dev/gpiochip0/../sda:1", "is not a GPIO chip"),
            ("gpiochip0:3,colour=red", "'colour=red' is not an option"),
            ("gpiochip0:3,before=2d", "before=2d: give 0 or a duration"),
            ("gpiochip0:3,debounce=1m", "debounce=1m: give 0 or a duration up to 10s"),
        ] {
            #expect(throws: GPIOError.self, "\(text)") { try GPIOMarkSpec.parse(text) }
            do { _ = try GPIOMarkSpec.parse(text) } catch {
                #expect(error.message.contains(says), "\(text): \(error.message)")
            }
        }
    }
}
