import FieldcapCore
import FieldcapSystem
import SyncField
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A stream another program feeds: a Unix socket that takes one program's newline-delimited JSON
/// records (`FeedLine`), each recorded as the SDK's `record()` would record it.
///
/// Why a stream socket of JSON lines, not SOCK_SEQPACKET: every language and every shell tool
/// writes lines to a stream (`socat`, `nc -U`, Python's `sendall`, C's `write`), a line is a
/// record a person can read in a log, and a reader that splits lines itself keeps a record
/// whole however the kernel cuts the stream. Datagram boundaries would save the split and cost
/// every feeder a less common socket type.
///
/// The capture thread is the feed's reader: it waits in `poll` on the listening socket, the
/// program's connection and the stop signal, stamps each read on arrival, parses each line,
/// checks it, and pushes a record naming the slot its values wait in (`FeedValues`). It never
/// waits for the writer: a full ring or no free slot drops the feed's own record, counted.
/// Unlike a camera's, this thread allocates (JSON has no fixed shape); it is the feed's own
/// thread, and no other stream's capture depends on it.
///
/// One program at a time: a second connection is told why in one line and closed. A program
/// that disconnects leaves an open absence (`presence`); the next one to connect continues the
/// stream, and the gap is recorded. A line that is no record is counted by reason, and the
/// first few are told (`Options.told`); it never ends the stream.
///
/// Thread-bound (capture) for `run`; `releaseBuffer` from the writer; `report` from any thread.
public final class FeedSource: CaptureSource, @unchecked Sendable {
    public struct Options: Sendable {
        /// The socket to listen at (`FeedSocket.path`).
        public var socketPath: String
        /// The rate the program is expected to send at, per second; 0 when not said.
        public var nominalRate: Double = 0
        /// The channels every record must carry (`channels=`), as flattened names or their
        /// prefixes: `force` pins every leaf under it. nil: any.
        public var pinned: [String]?
        /// Records parsed and not yet written, at most.
        public var slots = 4096
        /// The longest line taken, in bytes; a longer one is refused whole.
        public var maximumLineBytes = 1 << 16
        /// Told (on the capture thread) each of the first `toldProblems` problems: a line refused
        /// and why, a second program refused.
        public var told: (@Sendable (String) -> Void)?
        public var toldProblems = 5
        /// The environment the default socket directory is read from.
        public var environment: [String: String] = [:]

        public init(socketPath: String) { self.socketPath = socketPath }
    }

    public let descriptor: StreamDescriptor
    public let options: Options
    public let presence: StreamPresence?
    private let listener: LocalSocket
    private let values: FeedValues
    private let tally = Tally()
    private let pinnedSet: Set<String>?
    /// When the socket opened: no program could feed the stream before, so a `capture_ns`
    /// earlier than this is outside the recording.
    private let openedNs: UInt64

    /// What the reader counted, for the report; written by the capture thread.
    final class Tally: Sendable {
        let lines = Atomic<Int>(0)
        let accepted = Atomic<Int>(0)
        let stampedByProgram = Atomic<Int>(0)
        let stampedOnArrival = Atomic<Int>(0)
        let noSlot = Atomic<Int>(0)
        let connections = Atomic<Int>(0)
        let refusedPrograms = Atomic<Int>(0)
        /// Refused lines by reason (rare: a lock is cheap enough).
        let rejected = Mutex<[String: Int]>([:])
        let firstProblems = Mutex<[String]>([])
        let firstChannels = Mutex<[String]?>(nil)
    }

    /// Listens at `options.socketPath` (made ready by `FeedSocket.prepare`) for the stream `id`.
    public init(id: String, name: String, options: Options) throws(DeviceError) {
        let device = "feed:\(name)"
        try FeedSocket.prepare(options.socketPath, device: device, environment: options.environment)
        listener = try FeedSocket.listen(at: options.socketPath, device: device)
        openedNs = MonotonicClock.now()
        self.options = options
        values = FeedValues(slots: options.slots)
        presence = StreamPresence()
        pinnedSet = options.pinned.map(Set.init)
        descriptor = StreamDescriptor(
            id: id, kind: .feed, nominalRate: options.nominalRate, device: device,
            feedValues: values)
    }

    deinit {
        listener.close()
        _ = SocketFiles.remove(options.socketPath)
    }

    public func releaseBuffer(_ index: Int32) { values.release(index) }

    /// The reader's counts now (any thread).
    struct TallySnapshot {
        var lines, accepted, stampedByProgram, stampedOnArrival, noSlot, connections, refusedPrograms: Int
        var rejected: [String: Int]
        var firstProblems: [String]
        var firstChannels: [String]?
    }

    var tallySnapshot: TallySnapshot {
        TallySnapshot(
            lines: tally.lines.load(ordering: .relaxed), accepted: tally.accepted.load(ordering: .relaxed),
            stampedByProgram: tally.stampedByProgram.load(ordering: .relaxed),
            stampedOnArrival: tally.stampedOnArrival.load(ordering: .relaxed),
            noSlot: tally.noSlot.load(ordering: .relaxed), connections: tally.connections.load(ordering: .relaxed),
            refusedPrograms: tally.refusedPrograms.load(ordering: .relaxed),
            rejected: tally.rejected.withLock { $0 },
            firstProblems: tally.firstProblems.withLock { $0 }, firstChannels: tally.firstChannels.withLock { $0 })
    }

    // MARK: - The reader

    public func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: options.maximumLineBytes, alignment: 16)
        defer { buffer.deallocate() }
        var reader = Reader(source: self, ring: ring, startNs: openedNs, buffer: buffer)
        defer { reader.closeProgram() }
        while !stop.isRequested {
            var descriptors = [
                pollfd(fd: stop.wakeDescriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0),
            ]
            if let program = reader.program {
                descriptors.append(pollfd(fd: program.descriptor, events: Int16(POLLIN), revents: 0))
            }
            if case .failure(let error) = LocalSocket.poll(&descriptors, timeoutMs: -1) {
                throw DeviceError(code: .other, device: descriptor.device, operation: "poll", errno: error.rawValue)
            }
            if stop.isRequested { break }
            if descriptors[1].revents != 0 { acceptPrograms(&reader) }
            guard reader.program != nil, descriptors.count > 2, descriptors[2].revents != 0 else { continue }
            _ = reader.readOnce()
        }
        // What the program sent before the stop is in the socket: taken, up to a few reads.
        var reads = 0
        while reader.program != nil, reads < 64, reader.readOnce() { reads += 1 }
    }

    /// Takes every connection waiting: the first while no program feeds, the others refused.
    private func acceptPrograms(_ reader: inout Reader) {
        while case .success(let connection) = listener.accept() {
            if reader.program == nil {
                reader.programCame(connection)
            } else {
                tally.refusedPrograms.add(1, ordering: .relaxed)
                connection.sendWithoutWaiting(
                    Array(
                        "fieldcap: \(descriptor.device) already has a program feeding it; one program feeds a stream\n"
                            .utf8))
                connection.close()
                reader.tell("a second program connected and was refused: one program feeds a stream")
            }
        }
    }

    /// The reader's state, on the capture thread.
    struct Reader {
        let source: FeedSource
        let ring: SPSCRing<CaptureRecord>
        let startNs: UInt64
        var program: LocalSocket?
        var sequence: UInt64 = 0
        var lastCaptureNs: UInt64 = 0
        /// A slot taken for a record the ring then had no room for: used next.
        var spareSlot: Int32?
        /// The lines read and not yet ended: `held` bytes at the buffer's start; `skipping` while
        /// the rest of a line too long for it goes by.
        let buffer: UnsafeMutableRawBufferPointer
        var held = 0
        var skipping = false

        init(source: FeedSource, ring: SPSCRing<CaptureRecord>, startNs: UInt64, buffer: UnsafeMutableRawBufferPointer)
        {
            self.source = source
            self.ring = ring
            self.startNs = startNs
            self.buffer = buffer
        }

        /// One read from the program: its lines taken, stamped with the read's arrival; at its
        /// end, the program gone. False when there was nothing to read or the program left.
        mutating func readOnce() -> Bool {
            guard let program else { return false }
            switch program.receive(into: UnsafeMutableRawBufferPointer(rebasing: buffer[held...])) {
            case .failure(let error) where error == .wouldBlock:
                return false
            case .success(0), .failure:
                if held > 0 && !skipping {
                    refuse(FeedLine.Problem(.notJSON, "the line ended with the connection, unfinished"))
                }
                held = 0
                skipping = false
                programLeft()
                return false
            case .success(let count):
                let arrivalNs = MonotonicClock.now()
                var start = 0
                let end = held + count
                var index = held
                while index < end {
                    if buffer[index] == UInt8(ascii: "\n") {
                        if skipping {
                            skipping = false
                        } else {
                            take(UnsafeRawBufferPointer(rebasing: buffer[start..<index]), arrivalNs: arrivalNs)
                        }
                        start = index + 1
                    }
                    index += 1
                }
                held = end - start
                if held == buffer.count {
                    // A line longer than the buffer: refused whole (once), its rest skipped to its end.
                    if !skipping { refuse(FeedLine.Problem(.notJSON, "a line longer than \(buffer.count) bytes")) }
                    skipping = true
                    held = 0
                } else if held > 0 && start > 0 {
                    buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: held)
                }
                return true
            }
        }

        mutating func programCame(_ connection: LocalSocket) {
            program = connection
            let count = source.tally.connections.add(1, ordering: .relaxed).newValue
            if count > 1 { source.presence?.returned(atNs: MonotonicClock.now(), as: "connection \(count)") }
        }

        mutating func programLeft() {
            closeProgram()
            source.presence?.left(atNs: MonotonicClock.now(), reason: "the program feeding it disconnected")
        }

        mutating func closeProgram() {
            program?.close()
            program = nil
        }

        mutating func tell(_ text: String) {
            let kept = source.tally.firstProblems.withLock { problems in
                guard problems.count < source.options.toldProblems else { return false }
                problems.append(text)
                return true
            }
            if kept { source.options.told?(text) }
        }

        mutating func refuse(_ problem: FeedLine.Problem) {
            let line = source.tally.lines.add(1, ordering: .relaxed).newValue
            source.tally.rejected.withLock { $0[problem.rejection.rawValue, default: 0] += 1 }
            tell("line \(line) refused (\(problem.rejection.rawValue)): \(String(problem.detail.prefix(160)))")
        }

        /// One line, arrived at `arrivalNs`: parsed, checked, and pushed, or refused.
        mutating func take(_ bytes: UnsafeRawBufferPointer, arrivalNs: UInt64) {
            // Blank lines (a program's trailing newline, `\r\n` ends) are no records and no errors.
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
            let line: FeedLine
            do { line = try FeedLine(parsing: bytes) } catch {
                refuse(error)
                return
            }
            if let pinned = source.pinnedSet, let problem = FeedSchema.problem(line.flattenedNames, pinned: pinned) {
                refuse(FeedLine.Problem(.schema, problem))
                return
            }
            let captureNs = line.captureNs ?? arrivalNs
            if let given = line.captureNs {
                if given < startNs || given > arrivalNs {
                    let when = given < startNs ? "before the feed opened" : "after the line arrived"
                    refuse(
                        FeedLine.Problem(
                            .outsideSession,
                            "capture_ns \(given) is \(when) (CLOCK_MONOTONIC_RAW, the same clock in every process)"))
                    return
                }
            }
            if captureNs < lastCaptureNs {
                refuse(
                    FeedLine.Problem(
                        .backwards, "capture_ns \(captureNs) is before the last record's, \(lastCaptureNs)"))
                return
            }
            source.tally.lines.add(1, ordering: .relaxed)
            source.tally.accepted.add(1, ordering: .relaxed)
            if line.captureNs == nil {
                source.tally.stampedOnArrival.add(1, ordering: .relaxed)
            } else {
                source.tally.stampedByProgram.add(1, ordering: .relaxed)
            }
            if sequence == 0 { source.tally.firstChannels.withLock { $0 = line.flattenedNames } }
            lastCaptureNs = captureNs
            defer { sequence += 1 }
            guard let slot = spareSlot ?? source.values.takeSlot() else {
                source.tally.noSlot.add(1, ordering: .relaxed)
                ring.drops.record(sequence)
                return
            }
            spareSlot = nil
            source.values.store(line.channels, in: slot)
            var record = CaptureRecord()
            record.sequence = sequence
            record.dequeueNs = arrivalNs
            record.captureNs = captureNs
            record.uncertaintyNs = line.uncertaintyNs ?? syncFieldDefaultUncertaintyNs
            record.bufferIndex = slot
            if !ring.push(record, sequence: sequence) { spareSlot = slot }
        }
    }
}
