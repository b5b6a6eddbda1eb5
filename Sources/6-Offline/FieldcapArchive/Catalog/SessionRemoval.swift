import FieldcapCore
import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import SyncField

/// `fieldcap sessions rm`: deletes sessions, recordings and segments of recordings, by name or by
/// age, and nothing else: never a directory holding a file fieldcap did not write, never one a
/// fieldcap is recording into. Everything is checked before anything is deleted, so a refused
/// name leaves the root as it was.
public enum SessionRemoval {
    /// Something to delete.
    public struct Target: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            case session, recording
            /// A segment of a finished recording, by its number in the recording's index.
            case segment(number: Int)
        }

        /// As the user names it: `SESSION`, `RECORDING` or `RECORDING/SEGMENT`.
        public var name: String
        public var path: String
        public var kind: Kind
        public var bytes: UInt64
    }

    /// What was chosen, and what was not, each with a line saying why.
    public struct Plan: Sendable {
        public var targets: [Target] = []
        public var refused: [String] = []

        /// A target, or the line saying why `name` was refused.
        mutating func add(_ result: Result<Target, Refusal>, name: String) {
            switch result {
            case .success(let target): targets.append(target)
            case .failure(let refusal): refused.append("\(name): \(refusal.message)")
            }
        }
    }

    /// The targets `names` (relative to `root`) give, with a line for each one refused.
    public static func plan(root: String, names: [String]) -> Plan {
        var plan = Plan()
        for name in names {
            let trimmed = name.hasSuffix("/") ? String(name.dropLast()) : name
            let parts = trimmed.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
                plan.refused.append("\(name): name a session or recording under \(root), or RECORDING/SEGMENT")
                continue
            }
            let path = "\(root)/\(trimmed)"
            // A link is deleted as a link whatever it leads to: not a session, and its target's
            // size is not what would be freed.
            let link = parts.indices.map { "\(root)/" + parts[...$0].joined(separator: "/") }.first {
                SessionCatalog.isSymbolicLink($0)
            }
            if let link {
                plan.refused.append(
                    "\(name): \(link) is a symbolic link, not a session "
                        + "or recording: not deleted (remove the link with rm)"
                )
                continue
            }
            var isDirectory = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory else {
                plan.refused.append("\(name): no such directory under \(root)")
                continue
            }
            let result =
                parts.count == 1
                ? target(name: trimmed, path: path)
                : segmentTarget(name: trimmed, recording: "\(root)/\(parts[0])", segment: parts[1])
            plan.add(result, name: name)
        }
        return plan
    }

    /// Everything under `root` that ended before `beforeNs` (wall clock): whole sessions and
    /// recordings, and the old segments of a recording that goes on later. What is being
    /// recorded, waits for `fieldcap recover`, or holds another program's files is left, with a
    /// line saying so; directories that are not fieldcap's are left without one.
    public static func plan(root: String, endedBefore beforeNs: UInt64) throws -> Plan {
        var plan = Plan()
        for entry in try SessionCatalog.entries(root: root) {
            switch entry.kind {
            case .foreign: continue
            case .session:
                guard let end = entry.endNs ?? entry.startNs, end < beforeNs else { continue }
                if entry.state != .complete {
                    plan.refused.append("\(entry.name): \(stateRefusal(entry.state))")
                    continue
                }
                plan.add(target(name: entry.name, path: entry.path), name: entry.name)
            case .recording:
                guard let index = RecordingIndex.read(directory: entry.path) else { continue }
                let old = index.presentSegments.filter { (UTCTime.parse($0.endUtc) ?? .max) < beforeNs }
                guard !old.isEmpty else { continue }
                if entry.state != .complete {
                    plan.refused.append("\(entry.name): \(stateRefusal(entry.state))")
                    continue
                }
                if old.count == index.presentSegments.count {
                    plan.add(target(name: entry.name, path: entry.path), name: entry.name)
                    continue
                }
                for segment in old {
                    let name = "\(entry.name)/\(segment.directory)"
                    plan.add(segmentTarget(name: name, recording: entry.path, segment: segment.directory), name: name)
                }
            }
        }
        return plan
    }

    /// Deletes `targets`; a segment's deletion is written into its recording's index with `reason`.
    /// `say` gets a line per deletion.
    public static func remove(_ targets: [Target], reason: String, say: (String) -> Void) throws {
        var segmentsByRecording: [String: [Target]] = [:]
        for target in targets {
            switch target.kind {
            case .session, .recording:
                try FileManager.default.removeItem(atPath: target.path)
                say("deleted \(target.name) (\(ByteSize(bytes: target.bytes)))")
            case .segment:
                let recording = PathName.directory(of: target.path)
                segmentsByRecording[recording, default: []].append(target)
            }
        }
        for (recording, segments) in segmentsByRecording.sorted(by: { $0.key < $1.key }) {
            guard var index = RecordingIndex.read(directory: recording) else { continue }
            for target in segments {
                guard case .segment(let number) = target.kind,
                    let position = index.segments.firstIndex(where: { $0.number == number })
                else { continue }
                try FileManager.default.removeItem(atPath: target.path)
                index.segments[position].state = .deleted
                index.segments[position].deleted = RecordingIndex.Deletion(utc: Sidecar.utc(Date()), reason: reason)
                say("deleted \(target.name) (\(ByteSize(bytes: target.bytes)))")
            }
            try index.write(directory: recording)
        }
    }

    struct Refusal: Error {
        var message: String
    }

    static func stateRefusal(_ state: CatalogEntry.State) -> String {
        switch state {
        case .recording: "being recorded right now: not deleted"
        case .needsRecover: "needs `fieldcap recover` first (it was not finished): not deleted"
        case .complete, .foreign: "not deleted"
        }
    }

    /// A whole session or recording, if every file in it is fieldcap's and nothing records into it.
    static func target(name: String, path: String) -> Result<Target, Refusal> {
        let entry = SessionCatalog.entry(directory: path, name: name)
        if entry.kind != .foreign && RecordingLock.isHeld(directory: path) {
            return .failure(Refusal(message: stateRefusal(.recording)))
        }
        switch entry.kind {
        case .foreign:
            return .failure(
                Refusal(
                    message: "not a fieldcap session or recording (no fieldcap.json or recording.json): not deleted"))
        case .session:
            if let stranger = SessionFiles.stranger(in: path, streams: entry.streams.map(\.id)) {
                return .failure(Refusal(message: "holds \(stranger), which fieldcap did not write: not deleted"))
            }
            return .success(Target(name: name, path: path, kind: .session, bytes: entry.bytes))
        case .recording:
            guard let index = RecordingIndex.read(directory: path) else {
                return .failure(Refusal(message: "its recording.json cannot be read: not deleted"))
            }
            let segments = Set(index.presentSegments.map(\.directory))
            let streams = index.streams.map(\.id)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            for child in names.sorted() where child != RecordingIndex.fileName {
                guard segments.contains(child) else {
                    return .failure(
                        Refusal(message: "holds \(child), which its recording.json does not list: not deleted"))
                }
                if let stranger = SessionFiles.stranger(in: "\(path)/\(child)", streams: streams) {
                    return .failure(
                        Refusal(message: "\(child) holds \(stranger), which fieldcap did not write: not deleted"))
                }
            }
            return .success(Target(name: name, path: path, kind: .recording, bytes: entry.bytes))
        }
    }

    /// One finished segment of a recording nothing records into.
    static func segmentTarget(name: String, recording: String, segment: String) -> Result<Target, Refusal> {
        guard let index = RecordingIndex.read(directory: recording) else {
            return .failure(
                Refusal(message: "\(PathName.base(of: recording)) is not a segmented recording"))
        }
        if RecordingLock.isHeld(directory: recording) {
            return .failure(
                Refusal(
                    message:
                        "its recording is being recorded right now: not deleted "
                        + "(its --max-storage and --keep prune it while it runs)"
                ))
        }
        guard let entry = index.segments.first(where: { $0.directory == segment }), entry.state != .deleted else {
            return .failure(Refusal(message: "not a segment its recording.json lists: not deleted"))
        }
        guard entry.state == .complete || entry.state == .recovered else {
            return .failure(Refusal(message: "not finished (run `fieldcap recover` on its recording): not deleted"))
        }
        let path = "\(recording)/\(segment)"
        if let stranger = SessionFiles.stranger(in: path, streams: index.streams.map(\.id)) {
            return .failure(Refusal(message: "holds \(stranger), which fieldcap did not write: not deleted"))
        }
        return .success(
            Target(
                name: name, path: path, kind: .segment(number: entry.number),
                bytes: entry.bytes ?? SessionFiles.bytesOnDisk(path)))
    }
}
