import FieldcapSegments
import FieldcapSystem
import FoundationEssentials
import SyncField

/// Checks a segmented recording: its index (`recording.json`) against the directory, and every
/// segment still on disk as the SyncField session it must be.
public enum RecordingValidator {
    public struct Report {
        /// `SEGMENT/FILE:LINE: MESSAGE` for a segment's problems, `recording.json: ...` for the index's.
        public var problems: [String] = []
        public var warnings: [String] = []
        /// Segments on disk that validated, and deleted (by the storage budget or by hand).
        public var segmentsValid = 0
        public var segmentsDeleted = 0
        /// Deleted segments by why, as the index says (`--max-storage 16G`, `fieldcap sessions rm`).
        public var deletedBecause: [String: Int] = [:]

        /// "3 deleted (2 by --max-storage 16G, 1 by fieldcap sessions rm)", or "0 deleted".
        public var deletedSummary: String {
            let reasons = deletedBecause.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
                .map { "\($0.value) by \($0.key)" }
            return "\(segmentsDeleted) deleted" + (reasons.isEmpty ? "" : " (\(reasons.joined(separator: ", ")))")
        }
        public var lineCount = 0
        public var isValid: Bool { problems.isEmpty }
    }

    /// nil when `directory` holds no recording index (a session, or not fieldcap's).
    public static func validate(
        directory: String, progress: ((SessionValidator.Progress) -> Void)? = nil
    ) -> Report? {
        guard let index = RecordingIndex.read(directory: directory) else { return nil }
        var report = Report()
        let name = RecordingIndex.fileName
        if index.state == "recording" {
            report.problems.append(
                "\(name): the recording is not finished: it is being recorded, or needs `fieldcap recover`")
        }
        for (previous, next) in zip(index.segments, index.segments.dropFirst()) where next.number != previous.number + 1
        {
            report.problems.append("\(name): segment \(next.number) follows segment \(previous.number)")
        }
        for segment in index.segments {
            let path = "\(directory)/\(segment.directory)"
            if PathName.isSymbolicLink(path) {
                report.problems.append(
                    "\(segment.directory): is a symbolic link, not a directory of the recording (not followed)")
                continue
            }
            let exists = FileManager.default.fileExists(atPath: path)
            switch segment.state {
            case .deleted:
                report.segmentsDeleted += 1
                report.deletedBecause[segment.deleted?.reason ?? "an unknown reason", default: 0] += 1
                if exists { report.problems.append("\(segment.directory): listed as deleted, but still there") }
                continue
            case .recording:
                report.problems.append(
                    "\(segment.directory): not finished: being recorded, or needs `fieldcap recover`")
                continue
            case .complete, .recovered:
                break
            }
            guard exists else {
                report.problems.append("\(segment.directory): listed as \(segment.state.rawValue), but missing")
                continue
            }
            let session = SessionValidator.validateWithVideos(directory: path, progress: progress)
            report.problems += session.problems.map { "\(segment.directory)/\($0)" }
            report.warnings += session.warnings.map { "\(segment.directory)/\($0)" }
            report.lineCount += session.lineCount
            if session.isValid { report.segmentsValid += 1 }
        }
        return report
    }
}
