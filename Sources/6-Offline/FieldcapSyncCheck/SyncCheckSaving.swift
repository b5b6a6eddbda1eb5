import FieldcapCore
import FieldcapExport
import FieldcapSegments
import FieldcapSession
import FoundationEssentials
import SyncField

extension SyncCheckReport {
    /// The report as a session's `fieldcap.json` keeps it (`sync_check`), checked at `checkedAt`.
    public func entry(checkedAt: Date = Date()) -> SyncCheckEntry {
        func outcome(_ result: Result<OffsetEstimate, SyncCheckRefusal>) -> SyncCheckEntry.Outcome {
            switch result {
            case .failure(let refusal): return .refused(reason: refusal.reason.rawValue, message: refusal.message)
            case .success(let estimate):
                return .estimate(
                    SyncCheckEntry.Estimate(
                        offsetNs: Self.nanoseconds(estimate.offset), timeshiftCamIMU: estimate.timeshiftCamIMU,
                        correlation: estimate.peakCorrelation, sharpness: estimate.sharpness,
                        rivalCorrelation: estimate.rivalCorrelation, confidence: estimate.confidence,
                        gyroRMSRadS: estimate.gyroRMSRate, turnScale: estimate.turnScale, framePairs: estimate.pairs,
                        excludedPairs: estimate.excludedPairs, framePeriodNs: Self.nanoseconds(estimate.framePeriod)))
            }
        }
        let (choice, imu): (String, String?) =
            switch windowChoice {
            case .whole: ("whole", nil)
            case .given: ("given", nil)
            case .mostExcited(let imu): ("most_excited", imu)
            }
        return SyncCheckEntry(
            checkedUtc: Sidecar.utc(checkedAt), window: window, windowChoice: choice, windowIMU: imu,
            pairs: pairs.map { pair in
                SyncCheckEntry.Pair(
                    camera: pair.camera, imu: pair.imu, imageAlignment: outcome(pair.alignment),
                    differenceEnergy: outcome(pair.differenceEnergy), intrinsics: pair.usedIntrinsics,
                    frameUncertaintyNs: pair.frameUncertainty.map(Self.nanoseconds),
                    skippedFrames: pair.skippedFrames, missingGyroAxes: pair.missingGyroAxes,
                    exceedsFrameUncertainty: pair.exceedsFrameUncertainty,
                    calibrationTimeshiftCamIMU: pair.calibratedTimeshift)
            })
    }

    static func nanoseconds(_ seconds: Double) -> Int64 {
        let ns = (seconds * 1e9).rounded()
        return ns.isFinite ? Int64(max(-9e18, min(9e18, ns))) : 0
    }
}

extension SessionSyncCheck {
    /// The session to check for `directory`: itself when it is one (it has `manifest.json`), the
    /// first segment still on disk when it is a segmented recording (where a rig is waved, at the
    /// start); nil when it is neither.
    public static func session(for directory: String) -> String? {
        let layout = SessionLayout(directory: directory)
        if FileManager.default.fileExists(atPath: layout.manifest) { return directory }
        guard let index = RecordingIndex.read(directory: directory),
            let first = index.presentSegments.first(where: { $0.state != .recording })
        else { return nil }
        let segment = "\(directory)/\(first.directory)"
        return FileManager.default.fileExists(atPath: SessionLayout(directory: segment).manifest) ? segment : nil
    }

    /// Checks the session `directory` (or a recording's first segment, `session(for:)`) and puts
    /// the result into its `fieldcap.json` as `sync_check`: what `serve --check-sync` does after
    /// each recording. Returns the session checked and what was saved.
    public static func checkAndSave(directory: String) throws -> (session: String, entry: SyncCheckEntry) {
        guard let session = session(for: directory) else {
            throw ExportError(.session, "\(directory) is neither a session nor a recording with a finished segment")
        }
        let entry = try check(directory: session).entry()
        try Sidecar.storeSyncCheck(entry, layout: SessionLayout(directory: session))
        return (session, entry)
    }
}
