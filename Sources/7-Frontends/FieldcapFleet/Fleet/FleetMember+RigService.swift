import FieldcapRig
import FieldcapSession
import FieldcapSystem
import SyncField

extension FleetMember.Rig {
    /// A fleet member's rig: the service's recording, started at the fleet's instant with its
    /// capture id, stopped, and its status as the fleet shows it.
    public init(service rig: RigService) {
        let host = rig.settings.hostId
        self.init(
            start: { captureId, at in
                var request = RigService.StartRequest()
                request.captureId = captureId
                request.startAtWallClockNs = at
                let directory = try await rig.start(request)
                // A segmented recording's first sync point comes as its first segment opens.
                for _ in 0..<100 {
                    if let syncPoint = rig.recordingSyncPoint { return (directory, syncPoint.wallClockNs) }
                    try await Task.sleep(nanoseconds: 20_000_000)
                }
                return (directory, 0)
            },
            stop: { why in try await rig.stop(why).directory },
            status: {
                let status = rig.status
                return FleetStatus(
                    host: host, state: status.state,
                    session: status.recording.map { PathName.base(of: $0) },
                    streams: (status.status?.streams ?? []).map {
                        FleetStatus.Stream(
                            id: $0.id, rate: $0.rate, written: UInt64($0.written), dropped: UInt64($0.dropped),
                            away: $0.away)
                    },
                    freeBytes: status.status?.diskFree)
            },
            mark: { command in
                guard let label = command.label else {
                    throw MarkRefusal(.badRequest, "a mark command needs a label")
                }
                var request = MarkRequest(
                    label: label, note: command.note, source: "fleet", beforeSeconds: command.before,
                    afterSeconds: command.after)
                request.atWallClockNs = command.atWallClockNs
                let taken = try rig.mark(request)
                return (taken.mark.id, PathName.base(of: rig.recordingDirectory ?? ""))
            })
    }
}
