/// The records of several streams in one time order (by `capture_ns`; a tie goes to the stream
/// listed first), each stream read front to back: what an MCAP file's data section should be,
/// so a reader that plays it front to back (`ros2 bag play`) sees time move forward.
///
/// Thread-bound.
struct TimeOrder {
    enum Record {
        case frame(CameraReader.Frame)
        case sample(SensorReader.Sample)

        var captureNs: UInt64 {
            switch self {
            case .frame(let frame): frame.captureNs
            case .sample(let sample): sample.captureNs
            }
        }
    }

    private let sources: [MCAPExport.Source]
    private var heads: [Record?]

    init(sources: [MCAPExport.Source]) throws(ExportError) {
        self.sources = sources
        heads = []
        for index in sources.indices { heads.append(try Self.read(sources[index])) }
    }

    /// The earliest record not yet returned, with its stream's position.
    mutating func next() throws(ExportError) -> (Int, Record)? {
        var earliest: Int?
        for (index, head) in heads.enumerated() {
            guard let head else { continue }
            if earliest == nil || head.captureNs < heads[earliest!]!.captureNs { earliest = index }
        }
        guard let index = earliest else { return nil }
        let record = heads[index]!
        heads[index] = try Self.read(sources[index])
        return (index, record)
    }

    func cancel() {
        for source in sources { if case .camera(let reader, _, _, _, _) = source { reader.cancel() } }
    }

    private static func read(_ source: MCAPExport.Source) throws(ExportError) -> Record? {
        switch source {
        case .camera(let reader, _, _, _, _): return try reader.next().map(Record.frame)
        case .sensor(let reader, _, _): return try reader.next().map(Record.sample)
        }
    }
}
