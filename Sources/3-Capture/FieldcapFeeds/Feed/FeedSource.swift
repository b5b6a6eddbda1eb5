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
/// One program at a time, told `fieldcap: ready feed:NAME` as it is taken: a second connection
/// is told why in one line and closed. A program
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

    /// What a program that connects is told first when the feed takes it (then its device):
    /// `fieldcap: ready feed:gripper`. A refused one is told why instead.
    public static let readyLine = "fieldcap: ready"

    /// The gaps between programs kept as absences (`away`); later ones are only counted.
    static let absencesKept = 100

    public let descriptor: StreamDescriptor
    public let options: Options
    public let presence: StreamPresence?
    private let listener: StreamSocket
    private let values: FeedValues
    private let tally = Tally()
    private let pinnedSet: Set<String>?
    /// When the socket opened: no program could feed the stream before, so a `capture_ns`
    /// earlier than this is outside the recording.
    private let openedNs: UInt64
    /// The feed's lock (`FeedSocket.prepare`), held while it is open.
    private let lock: Int32
    /// The socket file as made, removed at the end only if it is still that file.
    private let socketIdentity: (device: UInt64, inode: UInt64)?

    /// What the reader counted, for the report; written by the capture thread.
    final class Tally: Sendable {
        let lines = Atomic<Int>(0)
        let accepted = Atomic<Int>(0)
        let stampedByProgram = Atomic<Int>(0)
        let stampedOnArrival = Atomic<Int>(0)
        let noSlot = Atomic<Int>(0)
        let connections = Atomic<Int>(0)
        let refusedPrograms = Atomic<Int>(0)
        let disconnections = Atomic<Int>(0)
        /// Refused lines by reason (rare: a lock is cheap enough).
        let rejected = Mutex<[String: Int]>([:])
        let firstProblems = Mutex<[String]>([])
        let firstChannels = Mutex<[String]?>(nil)
    }

    /// Listens at `options.socketPath` (made ready by `FeedSocket.prepare`) for the stream `id`.
    public init(id: String, name: String, options: Options) throws(DeviceError) {
        let device = "feed:\(name)"
        lock = try FeedSocket.prepare(options.socketPath, device: device, environment: options.environment)
        do { listener = try FeedSocket.listen(at: options.socketPath, device: device) } catch {
            SocketFiles.unlock(lock)
            throw error
        }
        socketIdentity = SocketFiles.identity(options.socketPath)
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
        removeSocketFile()
        SocketFiles.unlock(lock)
    }

    /// Removes the socket file, if it is still the one this feed made (a path someone replaced
    /// since is theirs). At the end of capture, so a recording that ends leaves none behind
    /// whenever the process lets its sources go; and when the source goes, for one that never ran.
    private func removeSocketFile() {
        if let made = socketIdentity, let now = SocketFiles.identity(options.socketPath), made == now {
            _ = SocketFiles.remove(options.socketPath)
        }
    }

    public func releaseBuffer(_ index: Int32) { values.release(index) }

    /// The reader's counts now (any thread).
    struct TallySnapshot {
        var lines, accepted, stampedByProgram, stampedOnArrival, noSlot, connections, refusedPrograms: Int
        var disconnections: Int
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
            disconnections: tally.disconnections.load(ordering: .relaxed),
            rejected: tally.rejected.withLock { $0 },
            firstProblems: tally.firstProblems.withLock { $0 }, firstChannels: tally.firstChannels.withLock { $0 })
    }

    // MARK: - The reader

    public func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: options.maximumLineBytes, alignment: 16)
        defer { buffer.deallocate() }
        var reader = Reader(source: self, ring: ring, startNs: openedNs, buffer: buffer)
        defer {
            reader.closeProgram()
            removeSocketFile()
        }
        while !stop.isRequested {
            var descriptors = [
                pollfd(fd: stop.wakeDescriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0),
            ]
            if let program = reader.program {
                descriptors.append(pollfd(fd: program.descriptor, events: Int16(POLLIN), revents: 0))
            }
            if case .failure(let error) = StreamSocket.poll(&descriptors, timeoutMs: -1) {
                throw DeviceError(code: .other, device: descriptor.device, operation: "poll", errno: error.rawValue)
            }
            if stop.isRequested { break }
            // The program first: one that closed before another connected has left by the time
            // the other is taken.
            if reader.program != nil, descriptors.count > 2, descriptors[2].revents != 0 { _ = reader.readOnce() }
            if descriptors[1].revents != 0 { acceptPrograms(&reader, stop: stop) }
        }
        // What the program sent before the stop is in the socket: taken, up to a few reads.
        var reads = 0
        while reader.program != nil, reads < 64, reader.readOnce() { reads += 1 }
    }

    /// Takes every connection waiting: the first while no program feeds, the others refused.
    /// Takes the connections waiting, at most 16 a turn (a flood of them cannot keep the reader
    /// from the program it has): the first while no program feeds, the others refused. A
    /// process out of descriptors (EMFILE) pauses a moment rather than spin on the listener.
    private func acceptPrograms(_ reader: inout Reader, stop: StopSignal) {
        for _ in 0..<16 {
            let connection: StreamSocket
            switch listener.accept() {
            case .success(let accepted): connection = accepted
            case .failure(let error) where error == .wouldBlock: return
            case .failure:
                _ = stop.wait(milliseconds: 100)
                return
            }
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
        let startNs: UInt64
        var program: StreamSocket?
        var lastCaptureNs: UInt64 = 0
        var handoff: FeedHandoff
        var lines: SocketLines

        init(source: FeedSource, ring: SPSCRing<CaptureRecord>, startNs: UInt64, buffer: UnsafeMutableRawBufferPointer)
        {
            self.source = source
            self.startNs = startNs
            lines = SocketLines(buffer: buffer)
            handoff = FeedHandoff(values: source.values, ring: ring)
        }

        /// One read from the program: its lines taken, stamped with the read's arrival; at its
        /// end, the program gone. False when there was nothing to read or the program left.
        mutating func readOnce() -> Bool {
            guard let program else { return false }
            // The splitter apart from `self` while its lines are taken (which changes `self`).
            var splitter = lines
            let longest = splitter.buffer.count
            let outcome = splitter.read(from: program) { event, arrivalNs in
                switch event {
                case .line(let bytes): take(bytes, arrivalNs: arrivalNs)
                case .tooLong: refuse(FeedLine.Problem(.notJSON, "a line longer than \(longest) bytes"))
                }
            }
            lines = splitter
            switch outcome {
            case .nothing: return false
            case .read: return true
            case .ended(let unfinished):
                if unfinished { refuse(FeedLine.Problem(.notJSON, "the line ended with the connection, unfinished")) }
                programLeft()
                return false
            }
        }

        mutating func programCame(_ connection: StreamSocket) {
            program = connection
            // One line back, which a program may read or not: `fieldcap feed` waits for it.
            connection.sendWithoutWaiting(Array("\(FeedSource.readyLine) \(source.descriptor.device)\n".utf8))
            let count = source.tally.connections.add(1, ordering: .relaxed).newValue
            if count > 1 && count <= FeedSource.absencesKept + 1 {
                source.presence?.returned(atNs: MonotonicClock.now(), as: "connection \(count)")
            }
        }

        mutating func programLeft() {
            closeProgram()
            let count = source.tally.disconnections.add(1, ordering: .relaxed).newValue
            // A program that connects for every line (`echo ... | fieldcap feed`) would fill the
            // sidecar with gaps: the first hundred are kept, the rest counted.
            if count <= FeedSource.absencesKept {
                source.presence?.left(atNs: MonotonicClock.now(), reason: "the program feeding it disconnected")
            }
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
            if source.tally.accepted.load(ordering: .relaxed) == 1 {
                source.tally.firstChannels.withLock { $0 = line.flattenedNames }
            }
            lastCaptureNs = captureNs
            if !handoff.push(
                line.channels, captureNs: captureNs, uncertaintyNs: line.uncertaintyNs ?? syncFieldDefaultUncertaintyNs,
                arrivalNs: arrivalNs, lineBytes: bytes.count)
            {
                source.tally.noSlot.store(handoff.noSlot, ordering: .relaxed)
            }
        }
    }
}
