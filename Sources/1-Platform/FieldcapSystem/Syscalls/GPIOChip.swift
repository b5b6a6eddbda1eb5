import CFieldcapLinux

#if canImport(Glibc)
    import Glibc
#endif

/// A GPIO chip's character device (`/dev/gpiochipN`), through the kernel's uAPI v2: what it is,
/// its lines' names, and one line requested for its rising edges. Each call returns its errno as
/// a value; interrupts are retried by `SystemCall`'s policy.
///
/// Owns its descriptor: `close` once. Thread-bound.
public struct GPIOChip: Sendable {
    public let path: String
    public let descriptor: Int32

    public static func open(_ path: String) -> Result<GPIOChip, Errno> {
        SystemCall.valueOrErrno { Glibc.open(path, O_RDONLY | O_CLOEXEC) }.map {
            GPIOChip(path: path, descriptor: $0)
        }
    }

    public struct Info: Sendable, Equatable {
        public var name: String
        public var label: String
        public var lines: Int
    }

    /// `GPIO_GET_CHIPINFO_IOCTL`: an error for a node that is not a GPIO chip (ENOTTY).
    public func info() -> Result<Info, Errno> {
        var name = [CChar](repeating: 0, count: 32)
        var label = [CChar](repeating: 0, count: 32)
        var lines: UInt32 = 0
        let result = SystemCall.retryingInterrupts {
            CFieldcapLinux_gpio_chip_info(descriptor, &name, &label, &lines)
        }
        guard result == 0 else { return .failure(.current) }
        return .success(Info(name: Self.text(name), label: Self.text(label), lines: Int(lines)))
    }

    /// Line `offset`'s name (empty when it has none) and its consumer while another holds it.
    public func line(_ offset: Int) -> Result<(name: String, consumer: String?), Errno> {
        var name = [CChar](repeating: 0, count: 32)
        var consumer = [CChar](repeating: 0, count: 32)
        var used: Int32 = 0
        let result = SystemCall.retryingInterrupts {
            CFieldcapLinux_gpio_line_info(descriptor, UInt32(offset), &name, &consumer, &used)
        }
        guard result == 0 else { return .failure(.current) }
        return .success((Self.text(name), used != 0 ? Self.text(consumer) : nil))
    }

    /// Requests line `offset` as an input reporting rising edges, each stamped by the kernel in
    /// CLOCK_MONOTONIC; the events' descriptor, non-blocking and closed on exec (`close` it once).
    public func requestRisingEdges(_ offset: Int, consumer: String, buffer: Int = 64) -> Result<Int32, Errno> {
        let requested = SystemCall.valueOrErrno {
            CFieldcapLinux_gpio_request_rising(descriptor, UInt32(offset), consumer, UInt32(buffer))
        }
        guard case .success(let line) = requested else { return requested }
        _ = fcntl(line, F_SETFL, fcntl(line, F_GETFL) | O_NONBLOCK)
        _ = fcntl(line, F_SETFD, FD_CLOEXEC)
        return .success(line)
    }

    /// An edge read from a line's events: the kernel's CLOCK_MONOTONIC at the edge, its number
    /// among the line's events (from 1), and whether it rose.
    public struct Edge: Sendable, Equatable {
        public var monotonicNs: UInt64
        public var lineSequence: UInt32
        public var rising: Bool
    }

    /// The next edge waiting on `line`, nil when none is.
    public static func readEdge(_ line: Int32) -> Result<Edge?, Errno> {
        var timestamp: UInt64 = 0
        var sequence: UInt32 = 0
        var rising: Int32 = 0
        let got = SystemCall.retryingInterrupts {
            CFieldcapLinux_gpio_read_event(line, &timestamp, &sequence, &rising)
        }
        if got < 0 { return .failure(.current) }
        return .success(got == 0 ? nil : Edge(monotonicNs: timestamp, lineSequence: sequence, rising: rising != 0))
    }

    public func close() { _ = Glibc.close(descriptor) }

    static func text(_ bytes: [CChar]) -> String {
        String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
