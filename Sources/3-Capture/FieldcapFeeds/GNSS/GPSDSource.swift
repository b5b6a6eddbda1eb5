import FieldcapCore
import FieldcapSystem
import SyncField
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A GNSS receiver through gpsd: each fix gpsd reports (`TPV`) is a record of position, velocity,
/// fix quality, their errors and the GNSS time, with the satellites of its last `SKY`; with
/// `pps`, the offset between GNSS time and the host's clock from gpsd's `PPS` and `TOFF`.
///
/// The capture thread connects to gpsd over TCP, asks `?WATCH={"enable":true,"json":true}`
/// (`"pps":true` too), and reads gpsd's lines as a feed reads a program's: each fix stamped
/// with `CLOCK_MONOTONIC_RAW` when its line arrived, handed to the writer through slots, never
/// waited for. gpsd not there, or gone (stopped, restarted), is an absence, not an end: the
/// thread tries again each second and the stream goes on when gpsd is back, the time between in
/// the sidecar's `away`.
///
/// Thread-bound (capture) for `run`; `releaseBuffer` from the writer; `report` from any thread.
public final class GPSDSource: CaptureSource, @unchecked Sendable {
    public struct Options: Sendable {
        public var host = "localhost"
        public var port: UInt16 = 2947
        /// Ask gpsd for its PPS and TOFF reports.
        public var pps = false
        /// The receiver's fix rate, per second (1 for most).
        public var nominalRate: Double = 1
        /// Told (on the capture thread) when gpsd cannot be reached or goes, and when it is back.
        public var told: (@Sendable (String) -> Void)?
        /// How long to wait between tries while gpsd is not there.
        public var retryMs: Int32 = 1000
        public var slots = 256

        public init() {}
    }

    /// A fix's `capture_ns` is when gpsd's report of it arrived, which is after the receiver's
    /// serial message and gpsd's reading of it (hundreds of ms at 9600 baud): its bound. The fix's
    /// own instant is its `time_ns`, in GNSS time.
    public static let uncertaintyNs: UInt64 = 500_000_000

    public let descriptor: StreamDescriptor
    public let options: Options
    public let presence: StreamPresence?
    private let values: FeedValues
    let tally = Tally()

    final class Tally: Sendable {
        let fixes = Atomic<Int>(0)
        let connections = Atomic<Int>(0)
        let version = Mutex<String?>(nil)
        let devices = Mutex<[String]>([])
        let noSlot = Atomic<Int>(0)
        /// Offsets by kind (PPS, TOFF): count, first, last, smallest, largest, in ns.
        let offsets = Mutex<[String: OffsetStatistics]>([:])
    }

    /// A kind of time offset, summed up as it comes.
    public struct OffsetStatistics: Sendable, Equatable {
        public var count = 0
        public var firstNs: Int64 = 0
        public var lastNs: Int64 = 0
        public var minimumNs: Int64 = .max
        public var maximumNs: Int64 = .min

        mutating func add(_ ns: Int64) {
            if count == 0 { firstNs = ns }
            count += 1
            lastNs = ns
            minimumNs = min(minimumNs, ns)
            maximumNs = max(maximumNs, ns)
        }
    }

    public init(id: String, options: Options) {
        self.options = options
        values = FeedValues(slots: options.slots)
        presence = StreamPresence()
        descriptor = StreamDescriptor(
            id: id, kind: .feed, nominalRate: options.nominalRate, device: Self.device(options), feedValues: values)
    }

    /// `gpsd` for the default gpsd, else `gpsd:HOST:PORT`.
    static func device(_ options: Options) -> String {
        options.host == "localhost" && options.port == 2947 ? "gpsd" : "gpsd:\(options.host):\(options.port)"
    }

    public func releaseBuffer(_ index: Int32) { values.release(index) }

    /// The offsets gpsd reported so far, by kind (`PPS`, `TOFF`).
    public var offsets: [String: OffsetStatistics] { tally.offsets.withLock { $0 } }

    public func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        var lines = SocketLines(buffer: buffer)
        var handoff = FeedHandoff(values: values, ring: ring)
        var sky: [String: ChannelValue]?
        var away: String?
        let watch =
            options.pps
            ? #"?WATCH={"enable":true,"json":true,"pps":true};"# + "\n" : #"?WATCH={"enable":true,"json":true};"# + "\n"
        while !stop.isRequested {
            let connection: StreamSocket
            switch StreamSocket.connect(host: options.host, port: options.port, timeoutMs: 2000) {
            case .failure(let error):
                if away == nil {
                    let reason = "no gpsd at \(options.host):\(options.port) (\(error))"
                    away = reason
                    presence?.left(atNs: MonotonicClock.now(), reason: reason)
                    options.told?("\(reason); trying again each second, the other streams record")
                }
                if stop.wait(milliseconds: options.retryMs) { return }
                continue
            case .success(let socket):
                connection = socket
            }
            defer { connection.close() }
            let count = tally.connections.add(1, ordering: .relaxed).newValue
            if away != nil {
                presence?.returned(atNs: MonotonicClock.now(), as: "gpsd connection \(count)")
                options.told?("gpsd at \(options.host):\(options.port) is back")
                away = nil
            }
            _ = Array(watch.utf8).withUnsafeBytes { connection.send($0) }
            lines.reset()
            reading: while !stop.isRequested {
                var descriptors = [
                    pollfd(fd: stop.wakeDescriptor, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: connection.descriptor, events: Int16(POLLIN), revents: 0),
                ]
                if case .failure(let error) = StreamSocket.poll(&descriptors, timeoutMs: -1) {
                    throw DeviceError(code: .other, device: descriptor.device, operation: "poll", errno: error.rawValue)
                }
                if stop.isRequested || descriptors[1].revents == 0 { continue }
                let outcome = lines.read(from: connection) { event, arrivalNs in
                    guard case .line(let bytes) = event else { return }
                    switch GPSDReport.read(bytes) {
                    case .fix(var channels):
                        if let sky { channels["sky"] = sky }
                        tally.fixes.add(1, ordering: .relaxed)
                        if !handoff.push(
                            channels, captureNs: arrivalNs, uncertaintyNs: Self.uncertaintyNs, arrivalNs: arrivalNs,
                            lineBytes: bytes.count)
                        {
                            tally.noSlot.store(handoff.noSlot, ordering: .relaxed)
                        }
                    case .sky(let channels):
                        sky = channels
                    case .offset(let kind, let offsetNs):
                        tally.offsets.withLock { $0[kind, default: OffsetStatistics()].add(offsetNs) }
                    case .other(let kind):
                        if kind == "VERSION", let version = JSONValue.parse(bytes)?["release"]?.stringValue {
                            tally.version.withLock { $0 = version }
                        } else if kind == "DEVICE", let path = JSONValue.parse(bytes)?["path"]?.stringValue {
                            tally.devices.withLock { if !$0.contains(path) { $0.append(path) } }
                        }
                    }
                }
                if case .ended = outcome {
                    let reason = "gpsd at \(options.host):\(options.port) closed the connection"
                    away = reason
                    presence?.left(atNs: MonotonicClock.now(), reason: reason)
                    options.told?("\(reason); trying again each second")
                    break reading
                }
            }
        }
    }
}
