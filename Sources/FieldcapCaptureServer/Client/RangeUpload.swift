import FieldcapArchive
import FieldcapSegments
import FieldcapService
import FieldcapSession
import FoundationEssentials

/// `uploadTimeRange`: the wall-clock range cut from what the rig recorded (`fieldcap
/// extract`'s own extractor, across segments), as one tar of a valid session, staged under the
/// root's hidden scratch names and removed after each attempt, sent or not. Its name ends in
/// `_<unix seconds of its start>`: AllSpark's server files an upload under the day that
/// suffix gives (else the day it arrives).
struct RangeUpload: Sendable {
    let fromNs: UInt64
    let toNs: UInt64

    struct Staged: Sendable {
        var tar: String
        var scratch: String
        var filename: String
        var size: UInt64
        /// The recording it was cut from.
        var source: String
        /// What it holds, for the report: `cam0 45 frames, imu0 150 records from 2 segments`.
        var summary: String
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    var rangeText: String {
        "\(Sidecar.utc(Date(timeIntervalSince1970: Double(fromNs) / 1e9))) to \(Sidecar.utc(Date(timeIntervalSince1970: Double(toNs) / 1e9)))"
    }

    /// Extracts and archives (blocking: file work).
    func stage(root: String, hostId: String) throws -> Staged {
        guard let source = try SessionCatalog.newest(overlapping: fromNs, toNs, root: root) else {
            throw Failure(description: "nothing on this rig was recorded from \(rangeText)")
        }
        let id = UUID().uuidString
        let scratch = "\(root)/.upload-\(id)"
        let tar = "\(root)/.upload-\(id).tar"
        let name = "\(hostId)-\(Self.compact(fromNs))-\(Self.compact(toNs))_\(fromNs / 1_000_000_000)"
        do {
            let outcome = try RangeExtractor.extract(
                .init(source: source.path, fromNs: fromNs, toNs: toNs, out: scratch))
            let size = try TarFile.write(directory: scratch, name: name, to: tar)
            let counts = outcome.records.map { "\($0.id) \($0.count)" }.joined(separator: ", ")
            let parts = outcome.parts.count
            return Staged(
                tar: tar, scratch: scratch, filename: "\(name).tar", size: size, source: source.path,
                summary: "\(counts) from \(parts) segment\(parts == 1 ? "" : "s") of \(source.name)")
        } catch let failure as RangeExtractor.Failure {
            Self.remove(scratch: scratch, tar: tar)
            throw Failure(description: failure.message)
        } catch {
            Self.remove(scratch: scratch, tar: tar)
            throw Failure(description: "\(error)")
        }
    }

    /// A range comes back from the server as Unix seconds in a double, off by up to a few
    /// hundred nanoseconds: ranges this close are the same range.
    static let slackNs: UInt64 = 1_000_000

    func isSame(as other: RangeUpload) -> Bool {
        max(fromNs, other.fromNs) - min(fromNs, other.fromNs) <= Self.slackNs
            && max(toNs, other.toNs) - min(toNs, other.toNs) <= Self.slackNs
    }

    /// Whether `delivered` (inclusive) holds this range, give or take `slackNs` at each end.
    func isCovered(by delivered: ClosedRange<UInt64>) -> Bool {
        delivered.lowerBound <= fromNs + Self.slackNs && delivered.upperBound + 1 + Self.slackNs >= toNs
    }

    /// The range cut at the segment boundaries of the recording at `directory`: one range a
    /// segment it overlaps (just itself when the recording is not segmented).
    func split(byRecordingIndexOf directory: String) -> [RangeUpload] {
        let parts = UploadQueue.finishedSegments(of: directory).compactMap { segment -> RangeUpload? in
            let from = max(fromNs, segment.fromNs), to = min(toNs, segment.toNs)
            return from < to ? RangeUpload(fromNs: from, toNs: to) : nil
        }
        return parts.isEmpty ? [self] : parts
    }

    static func remove(scratch: String, tar: String) {
        try? FileManager.default.removeItem(atPath: scratch)
        try? FileManager.default.removeItem(atPath: tar)
    }

    /// `20261124T114252.123Z`: a UTC time as a file name has it.
    static func compact(_ ns: UInt64) -> String {
        Sidecar.utc(Date(timeIntervalSince1970: Double(ns) / 1e9)).filter { $0 != "-" && $0 != ":" }
    }
}
