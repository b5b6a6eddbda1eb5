import FieldcapCore
import FieldcapOutput
import FieldcapSegments
import FoundationEssentials
import SyncField

/// A segmented recording keeps its marks in its index, and each one's line in the `events.ndjson`
/// of the segment its instant falls in; the budget keeps their windows longest.
extension SegmentedSessions: MarkKeeper {
    /// As last published: never waits for the index's lock, which an index write or a segment's
    /// deletion holds on a slow disk (a status reads this every second).
    public var marks: [Mark] { publishedMarks.withLock { $0 } }

    public var startNs: UInt64? {
        indexLock.lock()
        defer { indexLock.unlock() }
        return index.segments.first?.startMonotonicRawNs
    }

    public func wallClockNs(ofMonotonicRawNs ns: UInt64) -> UInt64? {
        latestSyncPoint.withLock { $0 }?.wallClockNs(ofMonotonicRawNs: ns)
    }

    public func keep(_ mark: Mark) throws(MarkRefusal) -> [String] {
        indexLock.lock()
        defer { indexLock.unlock() }
        guard let first = index.segments.first else {
            throw MarkRefusal(.conflict, "the recording has not begun yet: mark again once it has")
        }
        let schedule = SegmentSchedule(
            startNs: first.startMonotonicRawNs &- UInt64(first.number - 1) &* settings.lengthNs,
            lengthNs: settings.lengthNs)
        let segmentBytes = typicalSegmentBytes
        // As the budget counts: the largest segment's room for the one being written, and the
        // recording's own files (its index, the disk reserve).
        let openBytes = max(segmentBytes, index.segments.compactMap(\.bytes).max() ?? 0)
        let ownBytes = SessionFiles.bytesOnDisk(directory)
        if let maxBytes = settings.budget.maxBytes {
            // Its window alone, with the segment being written beside it, must fit the budget.
            var alone = mark
            alone.evicted = nil
            let needed = StorageBudget.bytesForMarkedWindows(
                marks: [alone], index: RecordingIndex.empty(like: index), schedule: schedule,
                segmentBytes: segmentBytes, openBytes: openBytes, ownBytes: ownBytes)
            if needed > maxBytes {
                // The rig's budget, not the request, is what refuses it: a conflict (409), as a
                // recording that is not running is.
                throw MarkRefusal(
                    .conflict,
                    "a window of \(Self.seconds(mark.beforeSeconds)) before and \(Self.seconds(mark.afterSeconds)) "
                        + "after takes about \(ByteSize(bytes: needed)), more than the budget "
                        + "(\(settings.maxStorageLabel)) holds: ask for a shorter window (--before, --after), "
                        + "or record with a larger budget")
            }
        }
        // The segment the instant falls in; an instant past the newest (a fleet's, a little ahead)
        // goes into the newest.
        // Never the segment made ready ahead (a recover would remove it as never written into).
        let number = schedule.number(containing: min(mark.captureNs, MonotonicClock.now()))
        guard let segment = index.segments.last(where: { $0.number <= number }) else {
            throw MarkRefusal(.conflict, "the instant is before the recording's first segment")
        }
        if segment.state == .deleted {
            throw MarkRefusal(
                .conflict,
                "the segment that held \(mark.utc) (\(segment.directory)) was deleted by the budget: nothing is "
                    + "left to mark")
        }
        do {
            try AppendFile.append(MarkLine.bytes(mark), to: "\(directory)/\(segment.directory)/\(MarkLine.fileName)")
        } catch {
            throw MarkRefusal(.conflict, "cannot write the mark into \(segment.directory): \(error)")
        }
        var marks = index.marks ?? []
        marks.append(mark)
        index.marks = marks
        publishedMarks.withLock { $0 = marks }
        var warnings: [String] = []
        let gone = index.segments.filter {
            $0.state == .deleted && mark.windowTouches(startNs: $0.startMonotonicRawNs, endNs: $0.endMonotonicRawNs)
        }
        if let last = gone.last {
            warnings.append(
                "the window's first part is gone already: \(gone.count) segment\(gone.count == 1 ? "" : "s") "
                    + "up to \(last.endUtc) were deleted by the budget before the mark came; a larger budget "
                    + "keeps more of the past")
        }
        if let maxBytes = settings.budget.maxBytes {
            let needed = StorageBudget.bytesForMarkedWindows(
                marks: marks, index: index, schedule: schedule, segmentBytes: segmentBytes, openBytes: openBytes,
                ownBytes: ownBytes)
            if needed > maxBytes {
                let oldest = marks.first { $0.evicted == nil }
                warnings.append(
                    "the marked windows take about \(ByteSize(bytes: needed)), more than the budget "
                        + "(\(settings.maxStorageLabel)): when room runs out the oldest marks are given up first"
                        + (oldest.map { ", \($0.id) \"\($0.label)\" (\($0.utc)) next" } ?? ""))
            }
        }
        do { try index.write(directory: directory) } catch {
            // The mark's line is on disk already; the index has it at its next write.
            warnings.append("the mark is in \(segment.directory)/\(MarkLine.fileName), not yet in the index: \(error)")
        }
        return warnings
    }

    /// What a segment takes on disk: the finished segments' mean, or before one has finished, the
    /// streams' estimate.
    var typicalSegmentBytes: UInt64 {
        let sizes = index.segments.compactMap { $0.state == .deleted ? nil : $0.bytes }
        if !sizes.isEmpty { return sizes.reduce(0, +) / UInt64(sizes.count) }
        return Self.estimatedBytes(
            streams: sources.map(\.descriptor), seconds: Double(settings.lengthNs) / 1e9)
    }

    /// Marks the index's mark `id` given up for the budget, and tells the front end. With
    /// `indexLock` held, on the rotation thread.
    func giveUp(mark id: String, reason: String) {
        guard var marks = index.marks, let position = marks.firstIndex(where: { $0.id == id }),
            marks[position].evicted == nil
        else { return }
        marks[position].evicted = RecordingIndex.Deletion(utc: Sidecar.utc(Date()), reason: reason)
        index.marks = marks
        publishedMarks.withLock { $0 = marks }
        let mark = marks[position]
        logger.warning(
            "mark \(mark.id) \"\(mark.label)\" (\(mark.utc)) given up: its window no longer fits (\(reason))")
        settings.markGivenUp?(mark, reason)
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}

extension RecordingIndex {
    /// The same recording with no segments written: for what a window alone would take.
    static func empty(like index: RecordingIndex) -> RecordingIndex {
        var empty = index
        empty.segments = []
        empty.marks = nil
        return empty
    }
}
