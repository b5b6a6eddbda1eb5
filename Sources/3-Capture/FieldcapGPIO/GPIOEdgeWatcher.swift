import FieldcapCore
import FieldcapSystem
import Glibc
import SyncField
import Synchronization

/// A GPIO line watched for rising edges while a recording runs, each one handed over as an
/// instant of `CLOCK_MONOTONIC_RAW` with its bound: the kernel stamps an edge in
/// `CLOCK_MONOTONIC` as it takes the interrupt, and the watcher maps that through clock pairs it
/// reads around it (`ClockTracker`), one at least every `pairEveryMs` while the line is quiet, so
/// an edge lies between two pairs and is mapped to within their brackets.
///
/// One thread (`fc-gpio`), which waits in `poll` on the line and the stop. Edges the kernel
/// dropped (its buffer full) are counted from the events' sequence numbers; edges closer than the
/// debounce to the one before are the same press.
public final class GPIOEdgeWatcher: @unchecked Sendable {
    /// An edge as the watcher hands it over.
    public struct Edge: Sendable, Equatable {
        public var rawNs: UInt64
        public var uncertaintyNs: UInt64
        /// Edges lost before this one (the kernel's buffer was full), or bounced into it.
        public var dropped: Int
        public var bounced: Int
    }

    public let spec: GPIOMarkSpec
    public let offset: Int
    static let pairEveryMs: Int32 = 200

    private let chip: GPIOChip
    private var line: Int32 = -1
    private let stopSignal = StopSignal()
    private var thread: DedicatedThread?
    /// Opened as the thread ends (its last edges handed over).
    private let ended = Latch()

    /// Checks that `spec`'s chip and line exist and that no other program holds the line, without
    /// taking it: for refusing a recording before it starts.
    public static func check(_ spec: GPIOMarkSpec) throws(GPIOError) {
        let (chip, offset) = try resolve(spec)
        chip.close()
        _ = offset
    }

    /// Opens `spec`'s chip and finds its line.
    static func resolve(_ spec: GPIOMarkSpec) throws(GPIOError) -> (GPIOChip, Int) {
        let chip: GPIOChip
        switch GPIOChip.open(spec.chipPath) {
        case .success(let opened): chip = opened
        case .failure(let error):
            let what =
                error.rawValue == ENOENT
                ? "no such GPIO chip (ls /dev/gpiochip*; gpioinfo lists their lines)"
                : error.rawValue == EACCES
                    ? "permission denied (fieldcap install-udev gives the fieldcap group the GPIO chips)"
                    : "cannot open it: \(error)"
            throw GPIOError("--mark-gpio \(spec.text.printable): \(spec.chipPath.printable): \(what)")
        }
        let info: GPIOChip.Info
        switch chip.info() {
        case .success(let read): info = read
        case .failure(let error):
            chip.close()
            throw GPIOError(
                "--mark-gpio \(spec.text.printable): \(spec.chipPath.printable) is not a GPIO chip (\(error))")
        }
        var offset = Int(spec.line).flatMap { $0 >= 0 ? $0 : nil }
        if offset == nil {
            offset = (0..<info.lines).first { (try? chip.line($0).get())?.name == spec.line }
        }
        guard let offset, offset < info.lines else {
            chip.close()
            throw GPIOError(
                "--mark-gpio \(spec.text.printable): \(info.name) (\(info.label.printable)) has no line "
                    + "'\(spec.line.printable)': it has lines 0 to \(info.lines - 1) (gpioinfo \(info.name) names them)"
            )
        }
        if case .success(let line) = chip.line(offset), let consumer = line.consumer {
            chip.close()
            throw GPIOError(
                "--mark-gpio \(spec.text.printable): line \(offset) of \(info.name) is in use by "
                    + "'\(consumer.printable)': stop that program, or pick another line")
        }
        return (chip, offset)
    }

    /// Takes the line for its rising edges.
    public init(_ spec: GPIOMarkSpec) throws(GPIOError) {
        self.spec = spec
        (chip, offset) = try Self.resolve(spec)
        switch chip.requestRisingEdges(offset, consumer: "fieldcap") {
        case .success(let descriptor): line = descriptor
        case .failure(let error):
            chip.close()
            throw GPIOError(
                "--mark-gpio \(spec.text.printable): cannot watch line \(offset) of \(spec.chipPath): \(error)")
        }
    }

    deinit { stop() }

    /// Watches on a thread of its own, each rising edge handed to `edge` there.
    public func start(_ edge: @escaping @Sendable (Edge) -> Void) {
        thread = DedicatedThread(name: "fc-gpio") { [self] in
            watch(edge)
            ended.open()
        }
    }

    /// Asks the thread to stop: it hands over the edges waiting (mapped as well as can be), then
    /// ends. Returns at once.
    public func requestStop() { stopSignal.request() }

    /// Waits up to `milliseconds` for the thread to end; whether it did.
    public func waitUntilStopped(milliseconds: Int32) -> Bool {
        thread == nil || ended.wait(milliseconds: milliseconds)
    }

    /// Stops watching (edges waiting are mapped as well as can be and handed over first), and
    /// gives the line back.
    public func stop() {
        stopSignal.request()
        thread?.join()
        thread = nil
        if line >= 0 {
            Glibc.close(line)
            line = -1
            chip.close()
        }
    }

    private func watch(_ hand: @Sendable (Edge) -> Void) {
        var tracker = ClockTracker()
        func pair() { _ = tracker.add(ClockPairReader.hostSample(CLOCK_MONOTONIC, after: Int64(MonotonicClock.now()))) }
        pair()
        var waiting: [(edge: GPIOChip.Edge, dropped: Int)] = []
        var lastSequence: UInt32 = 0
        var lastHandedNs: UInt64?
        var bounced = 0
        var droppedCarried = 0
        var descriptors = [
            pollfd(fd: line, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopSignal.wakeDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        func handOver(final: Bool) {
            var kept: [(edge: GPIOChip.Edge, dropped: Int)] = []
            for (edge, dropped) in waiting {
                let mapped: ClockTracker.Mapped?
                if final {
                    mapped = tracker.mapNow(Int64(edge.monotonicNs))
                } else {
                    switch tracker.map(Int64(edge.monotonicNs)) {
                    case .mapped(let value): mapped = value
                    case .ambiguous(_, let after): mapped = after
                    case .pending, nil: mapped = nil
                    }
                }
                guard let mapped, mapped.rawNs > 0 else {
                    kept.append((edge, dropped))
                    continue
                }
                let rawNs = UInt64(mapped.rawNs)
                if let last = lastHandedNs, rawNs >= last, rawNs - last < spec.debounceNs {
                    bounced += 1
                    // Edges the kernel lost are told with the next edge handed over.
                    droppedCarried += dropped
                    continue
                }
                lastHandedNs = rawNs
                hand(
                    Edge(
                        rawNs: rawNs, uncertaintyNs: UInt64(max(0, mapped.uncertaintyNs)),
                        dropped: dropped + droppedCarried,
                        bounced: bounced))
                bounced = 0
                droppedCarried = 0
            }
            waiting = kept
        }
        while !stopSignal.isRequested {
            let ready = StreamSocket.poll(&descriptors, timeoutMs: Self.pairEveryMs)
            if stopSignal.isRequested { break }
            if case .success(let count) = ready, count > 0, descriptors[0].revents & Int16(POLLIN) != 0 {
                while case .success(let edge?) = GPIOChip.readEdge(line) {
                    let dropped =
                        lastSequence > 0 && edge.lineSequence > lastSequence + 1
                        ? Int(edge.lineSequence - lastSequence - 1) : 0
                    lastSequence = edge.lineSequence
                    if edge.rising { waiting.append((edge, dropped)) }
                }
            } else if case .success(let count) = ready, count > 0 {
                // Hung up or failed (a chip unbound): a moment, then again, never a spin.
                _ = stopSignal.wait(milliseconds: Self.pairEveryMs)
            }
            // A pair after the edges read: each now lies between two pairs.
            pair()
            handOver(final: false)
        }
        pair()
        handOver(final: true)
    }
}
