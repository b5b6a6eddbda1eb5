import FieldcapCore
import Foundation
import SyncField

/// The live status line on a terminal, the JSON progress lines for rigs, and the summary.
///
/// Beside each stream's rate and drops (records fieldcap had no room for) it shows the records
/// the device itself skipped (`gap`: a camera skips frames while fieldcap holds all its buffers,
/// as on a disk slower than the video), and a stalled disk: files whose write or sync has taken
/// a second or more, from the session's `DiskWatch`.
final class StatusReporter {
    let directory: String
    let sources: [CaptureSource]
    let quiet: Bool
    let json: Bool
    let diskWatch: DiskWatch?
    private let line = TerminalLine()
    private var previous: [Int]
    private var previousElapsed = 0.0

    init(directory: String, sources: [CaptureSource], quiet: Bool, json: Bool, diskWatch: DiskWatch? = nil) {
        self.directory = directory
        self.sources = sources
        self.quiet = quiet
        self.json = json
        self.diskWatch = diskWatch
        previous = Array(repeating: 0, count: sources.count)
    }

    func printHeader() {
        let streams = sources.map { "\($0.descriptor.id) (\($0.descriptor.device))" }.joined(separator: ", ")
        FileHandle.standardError.write(Data("recording \(streams)\n  into \(directory)\n  Ctrl-C stops\n".utf8))
    }

    var diskFree: UInt64? {
        var stats = statvfs()
        guard statvfs(directory, &stats) == 0 else { return nil }
        return UInt64(stats.f_bavail) * UInt64(stats.f_frsize)
    }

    var bytesWritten: UInt64 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.reduce(0) { total, name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(name)")
            return total + ((attributes?[.size] as? UInt64) ?? 0)
        }
    }

    func report(_ statistics: [(id: String, written: Int, queued: Int, dropped: Int)], elapsed: Double) {
        let interval = max(0.001, elapsed - previousElapsed)
        let rates = statistics.enumerated().map { Double($1.written - previous[$0]) / interval }
        previous = statistics.map(\.written)
        previousElapsed = elapsed
        let gaps = sources.map { $0.deviceGaps?.count }
        // Taken at every report, also when nothing is shown: a stall is reported once it ends.
        let stalls = diskWatch?.takeRecentStalls() ?? []
        if json {
            let streams: [[String: Any]] = statistics.enumerated().map { index, stream in
                var entry: [String: Any] = [
                    "id": stream.id, "written": stream.written, "dropped": stream.dropped, "queued": stream.queued,
                    "rate": rates[index],
                ]
                if let gap = gaps[index] { entry["device_gaps"] = gap }
                return entry
            }
            var line: [String: Any] = ["elapsed_s": elapsed, "streams": streams, "bytes": bytesWritten]
            if let free = diskFree { line["disk_free_bytes"] = free }
            line["disk_stalls"] = stalls.map {
                ["file": $0.file, "operation": $0.operation.rawValue, "seconds": $0.seconds, "ongoing": $0.ongoing]
                    as [String: Any]
            }
            if let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) {
                FileHandle.standardOutput.write(data + Data("\n".utf8))
            }
            return
        }
        guard !quiet, line.isTerminal else { return }
        let parts = statistics.enumerated().map { index, stream in
            String(format: "%@ %.1f/s drop %d", stream.id, rates[index], stream.dropped)
                + ((gaps[index] ?? 0) > 0 ? " gap \(gaps[index]!)" : "")
        }
        let disk = diskFree.map { String(format: "  free %.1f GB", Double($0) / 1e9) } ?? ""
        line.draw(
            String(format: "%6.1fs  ", elapsed) + parts.joined(separator: " | ")
                + String(format: "  %.1f MB", Double(bytesWritten) / 1e6) + disk + Self.describe(stalls))
    }

    /// "  DISK STALLED: cam0.mkv write 3.0 s, imu.jsonl sync 2.1 s so far", or nothing.
    static func describe(_ stalls: [DiskWatch.Stall]) -> String {
        guard !stalls.isEmpty else { return "" }
        return "  DISK STALLED: "
            + stalls.map {
                String(
                    format: "%@ %@ %.1f s%@", $0.file, $0.operation.rawValue, $0.seconds, $0.ongoing ? " so far" : "")
            }.joined(separator: ", ")
    }

    func finishLine() { line.keep() }

    func printSummary(_ summary: [Recorder.StreamSummary], elapsed: Double, reason: String) {
        guard !quiet else { return }
        var text = String(format: "recorded %.1f s (stopped by %@) into %@\n", elapsed, reason, directory)
        for (index, stream) in summary.enumerated() {
            text += String(
                format: "  %@: %d written (%.1f/s), %d dropped", stream.id, stream.written,
                Double(stream.written) / max(elapsed, 0.001), stream.dropped)
            if let range = stream.droppedRange { text += " (records \(range.lowerBound)...\(range.upperBound))" }
            if let gaps = sources[index].deviceGaps?.count, gaps > 0 { text += ", \(gaps) skipped by the device" }
            if let error = stream.captureError { text += "; ended early: \(error)" }
            text += "\n"
        }
        if let watch = diskWatch, case let stalls = watch.summary(), !stalls.isEmpty {
            text +=
                String(format: "  the disk stalled (an operation of %g s or more): ", Double(watch.stallNs) / 1e9)
                + stalls.map {
                    String(
                        format: "%@ %@ %d time%@, %.1f s in all, longest %.1f s", $0.file, $0.operation.rawValue,
                        $0.count,
                        $0.count == 1 ? "" : "s", $0.totalSeconds, $0.longestSeconds)
                }.joined(separator: "; ") + "\n"
        }
        text += "check it with: fieldcap validate \(directory)\n"
        FileHandle.standardError.write(Data(text.utf8))
    }
}

/// One line on a terminal's stderr, redrawn in place: the status while recording, the progress
/// while validating.
final class TerminalLine {
    let isTerminal = isatty(STDERR_FILENO) == 1
    private var drawn = false

    func draw(_ text: String) {
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + text).utf8))
        drawn = true
    }

    /// Ends the line where it is, so what follows starts below it.
    func keep() {
        if drawn { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    /// Erases the line, so what follows takes its place.
    func erase() {
        if drawn { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}
