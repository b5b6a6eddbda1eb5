import FieldcapCore
import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import SyncField

/// A mark found by its id (`m3`) or its label, in a recording, a session, or the recordings and
/// sessions of a root: for `fieldcap extract --mark` and the API.
public enum MarkLookup {
    public struct Found: Sendable {
        /// The recording or session that holds it.
        public var directory: String
        public var mark: Mark
        /// Its window as UTC nanoseconds, [from, to).
        public var fromNs: UInt64
        public var toNs: UInt64
    }

    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The mark `key` names in `source`: the one with that id, else the one with that label (a
    /// label several marks share is refused, naming their ids). In a root, every recording and
    /// session is looked in, and the key must name one mark in all of them.
    public static func find(_ key: String, in source: String) throws(Failure) -> Found {
        let own = SessionCatalog.entry(directory: source, name: PathName.base(of: source))
        let entries: [CatalogEntry]
        if own.kind != .foreign {
            entries = [own]
        } else {
            do { entries = try SessionCatalog.entries(root: source) } catch {
                throw Failure(message: "\(source): not a recording, a session or a root of them")
            }
        }
        let byId = entries.flatMap { entry in (entry.marks ?? []).filter { $0.id == key }.map { (entry, $0) } }
        let byLabel = entries.flatMap { entry in (entry.marks ?? []).filter { $0.label == key }.map { (entry, $0) } }
        let matches = byId.count == 1 || byLabel.isEmpty ? byId : byLabel
        guard let (entry, mark) = matches.first else {
            let known = entries.flatMap { $0.marks ?? [] }
            throw Failure(
                message: "\(source): no mark \"\(key.printable)\""
                    + (known.isEmpty
                        ? " (it holds no marks)"
                        : "; its marks: "
                            + known.suffix(10).map { "\($0.id.printable) \($0.label.printable)" }.joined(
                                separator: ", ")))
        }
        if matches.count > 1 {
            let named = matches.map {
                entries.count > 1 ? "\($0.0.name.printable) \($0.1.id.printable)" : $0.1.id.printable
            }
            throw Failure(
                message:
                    "\(source): \(matches.count) marks are labelled \"\(key.printable)\" (\(named.joined(separator: ", "))): "
                    + "name one by its id" + (entries.count > 1 ? " and its recording" : ""))
        }
        if let evicted = mark.evicted {
            throw Failure(
                message:
                    "\(entry.path): mark \(mark.id.printable) \"\(mark.label.printable)\" was given up at \(evicted.utc) "
                    + "(\(evicted.reason)): its window's segments were deleted")
        }
        guard let utc = mark.wallClockNs ?? UTCTime.parse(mark.utc) else {
            throw Failure(message: "\(entry.path): mark \(mark.id) has no time fieldcap reads (\(mark.utc))")
        }
        // As a damaged index may hold them: windows clamped to 0 to a day, no sum past the end.
        func nanoseconds(_ seconds: Double) -> UInt64 {
            seconds.isFinite && seconds > 0 ? UInt64(min(seconds, MarkRequest.maxWindowSeconds) * 1e9) : 0
        }
        let before = nanoseconds(mark.beforeSeconds)
        let (end, overflow) = utc.addingReportingOverflow(nanoseconds(mark.afterSeconds) + 1)
        return Found(
            directory: entry.path, mark: mark, fromNs: utc > before ? utc - before : 0,
            toNs: overflow ? .max : end)
    }
}
