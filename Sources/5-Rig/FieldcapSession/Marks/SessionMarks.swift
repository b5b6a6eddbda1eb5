import FieldcapOutput
import FieldcapSegments
import FoundationEssentials
import SyncField
import Synchronization

/// The marks of a recording in one session (not segmented): each a line of the session's
/// `events.ndjson`. No budget deletes a session's data, so every mark keeps its window.
public final class SessionMarks: MarkKeeper, Sendable {
    public let directory: String
    private let syncPoint: SyncPoint
    public let startNs: UInt64?
    private let taken = Mutex<[Mark]>([])

    public init(directory: String, syncPoint: SyncPoint, startNs: UInt64) {
        self.directory = directory
        self.syncPoint = syncPoint
        self.startNs = startNs
    }

    public var marks: [Mark] { taken.withLock { $0 } }

    public func wallClockNs(ofMonotonicRawNs ns: UInt64) -> UInt64? {
        syncPoint.wallClockNs(ofMonotonicRawNs: ns)
    }

    public func keep(_ mark: Mark) throws(MarkRefusal) -> [String] {
        do { try AppendFile.append(MarkLine.bytes(mark), to: "\(directory)/\(MarkLine.fileName)") } catch {
            throw MarkRefusal(.conflict, "cannot write the mark: \(error)")
        }
        taken.withLock { $0.append(mark) }
        return []
    }
}
