import FieldcapCore
import FieldcapFaces
import SyncField

/// A camera's frames with their timestamp lines: the n-th frame of `{id}.mkv` and the n-th line
/// of `{id}.timestamps.jsonl`, whose `frame_number` is n (the validator has counted both).
///
/// Thread-bound (the exporter's); the file is read on the feed's own thread.
package final class CameraReader {
    package struct Frame {
        package var bytes: [UInt8]
        package var captureNs: UInt64
        /// The timestamp line's `uncertainty_ns`; nil when it has none.
        package var uncertaintyNs: UInt64?
        /// The boxes covered in it (pixels, grown by the margin); nil when faces are not covered.
        package var facesCovered: [FaceBox]? = nil
    }

    let stream: ExportSession.Stream
    /// Nil for a camera that recorded nothing in the session (it has no timestamps file).
    private let feed: FrameFeed?
    private let stamps: LineReader?
    /// Covers each frame's faces as it is read, in order, an MJPEG camera's in its JPEGs' YUV
    /// planes, written again as JPEG (nil: frames as recorded).
    private let faces: StoredFrameCover?

    /// `coveringFaces`: cover the faces of each frame before it is returned. Refused here, before
    /// anything is written, for a format the cover cannot read, or without the detector.
    package init(
        session: ExportSession, stream: ExportSession.Stream, coveringFaces: FaceCover.Settings? = nil
    ) throws(ExportError) {
        self.stream = stream
        if let settings = coveringFaces, let format = stream.format {
            if case .failure(let error) = StoredFrameCover.layout(stored: format, captured: nil) {
                throw ExportError(.request, "--blur-faces: \(stream.id) is \(format): \(error)")
            }
            // An FFV1 camera's frames come decoded (the feed decodes them): covered as captured.
            do throws(FaceCoverError) {
                faces = try StoredFrameCover(stored: format, settings: settings.offline(rate: stream.nominalRate))
            } catch {
                throw ExportError(.request, "--blur-faces: \(error)")
            }
        } else {
            faces = nil
        }
        guard !stream.recordedNothing else {
            (stamps, feed) = (nil, nil)
            return
        }
        stamps = try LineReader(path: session.layout.timestamps(stream.id))
        feed = FrameFeed(
            path: session.layout.video(stream.id), decodingFFV1To: stream.decodesFFV1 ? stream.format : nil)
    }

    /// What covering the faces did so far (nil when they are not covered).
    package var facesReport: FaceCoverReport? { faces?.report }

    /// Frames read and stamped, waiting for the cover to settle them (it looks ahead), and the
    /// covered frames it gave back, in order.
    private var waiting: [Frame] = []
    private var settled: [(bytes: [UInt8], covered: [FaceBox])] = []
    private var ended = false
    /// Frames read so far: the next one's number in the video, for messages.
    private var framesRead = 0

    package func next() throws(ExportError) -> Frame? {
        guard let faces else { return try read() }
        // The cover holds frames back until it has seen the ones after them.
        while settled.isEmpty && !ended {
            guard let frame = try read() else {
                ended = true
                do throws(FaceCoverError) { settled = try faces.flush() } catch {
                    throw ExportError(.output, "--blur-faces: \(stream.id): its last frames: \(error)")
                }
                break
            }
            waiting.append(frame)
            framesRead += 1
            do throws(FaceCoverError) { settled = try faces.push(frame.bytes) } catch {
                throw ExportError(
                    error.damagedFrame ? .session : .output,
                    "--blur-faces: \(stream.id) frame \(framesRead - 1): \(error)")
            }
        }
        guard !settled.isEmpty, !waiting.isEmpty else { return nil }
        var frame = waiting.removeFirst()
        let cover = settled.removeFirst()
        frame.bytes = cover.bytes
        frame.facesCovered = cover.covered
        return frame
    }

    /// The next frame as recorded.
    private func read() throws(ExportError) -> Frame? {
        guard let feed, let stamps, let frame = try feed.next() else { return nil }
        guard let line = try stamps.next() else {
            throw ExportError(.session, "\(stamps.path) has fewer lines than \(feed.path) has frames")
        }
        let stamp = try TimestampFields(line, path: stamps.path, lineNumber: stamps.lineNumber)
        guard stamp.frameNumber == frame.index else {
            throw ExportError(
                .session,
                "\(stamps.path) line \(stamps.lineNumber): frame_number "
                    + "\(stamp.frameNumber) is not the video's frame \(frame.index)"
            )
        }
        return Frame(bytes: frame.bytes, captureNs: stamp.captureNs, uncertaintyNs: stamp.uncertaintyNs)
    }

    package func cancel() { feed?.cancel() }
}

/// A sensor stream's samples from `{id}.jsonl`: each line's `capture_ns` and its channels' values
/// in the stream's channel order (nil where a line has no number for a channel).
///
/// Thread-bound.
package final class SensorReader {
    package struct Sample {
        package var captureNs: UInt64
        package var values: [Double?]
        /// The line's `channels` as they were written (compact JSON), for readers that keep the
        /// record's shape (a fed stream's JSON channel); nil unless asked for.
        package var channelsJSON: String?
    }

    /// Whether samples carry their channels' JSON.
    package let keepsJSON: Bool

    let stream: ExportSession.Stream
    /// The channels, as the sidecar lists them, or as the first line's keys (sorted, as
    /// SyncField writes them) for a stream recorded without a list; nested values are named by
    /// their path (`gyro[0]`, `joints.wrist[1]`).
    package private(set) var channels: [String]
    /// nil for a stream that recorded nothing (no file).
    private let lines: LineReader?
    private var peeked: Sample?

    package init(session: ExportSession, stream: ExportSession.Stream, keepingJSON: Bool = false) throws(ExportError) {
        self.stream = stream
        keepsJSON = keepingJSON
        lines = stream.recordedNothing ? nil : try LineReader(path: session.layout.sensor(stream.id))
        channels = stream.channels
        if channels.isEmpty, let first = try next() {
            peeked = first
        }
    }

    package func next() throws(ExportError) -> Sample? {
        if let peeked {
            self.peeked = nil
            return peeked
        }
        guard let lines, let line = try lines.next() else { return nil }
        // The SDK's own parse, not JSONValue's: the channels in the line's order (a stream's
        // channel order when the sidecar lists none), and each value as Double reads its
        // spelling (`-0` is -0.0, which JSONValue reads as the integer 0).
        let parsed: ParsedJSON
        do { parsed = try JSONTextParser.parse(line) } catch {
            throw ExportError(.session, "\(lines.path) line \(lines.lineNumber): \(error.message)")
        }
        guard let captureNs = parsed["capture_ns"]?.unsignedValue else {
            throw ExportError(.session, "\(lines.path) line \(lines.lineNumber): no capture_ns")
        }
        var flat: [(String, Double?)] = []
        if let channels = parsed["channels"] { Self.flatten(channels, path: "", into: &flat) }
        if self.channels.isEmpty { self.channels = flat.map(\.0) }
        var values = [Double?](repeating: nil, count: self.channels.count)
        for (name, value) in flat {
            if let at = self.channels.firstIndex(of: name) { values[at] = value }
        }
        var json: String?
        if keepsJSON, let channels = parsed["channels"] { json = JSONValue(channels).compactText() }
        return Sample(captureNs: captureNs, values: values, channelsJSON: json)
    }

    private static func flatten(_ value: ParsedJSON, path: String, into flat: inout [(String, Double?)]) {
        switch value {
        case .object(let members):
            for member in members {
                flatten(member.value, path: path.isEmpty ? member.key : "\(path).\(member.key)", into: &flat)
            }
        case .array(let items):
            for (offset, item) in items.enumerated() { flatten(item, path: "\(path)[\(offset)]", into: &flat) }
        case .number(let text): flat.append((path, Double(text)))
        case .bool(let value): flat.append((path, value ? 1 : 0))
        case .string, .null: flat.append((path, nil))
        }
    }
}

/// A timestamp line's `capture_ns`, `frame_number` and `uncertainty_ns` (nil without one).
struct TimestampFields {
    var captureNs: UInt64
    var frameNumber: Int
    var uncertaintyNs: UInt64?

    init(_ line: ArraySlice<UInt8>, path: String, lineNumber: Int) throws(ExportError) {
        let parsed: JSONValue
        do { parsed = try JSONValue(parsing: line) } catch {
            throw ExportError(.session, "\(path) line \(lineNumber): \(error.message)")
        }
        guard let captureNs = parsed["capture_ns"]?.unsignedValue,
            let frameNumber = parsed["frame_number"]?.integerValue
        else { throw ExportError(.session, "\(path) line \(lineNumber): no capture_ns or frame_number") }
        self.captureNs = captureNs
        self.frameNumber = Int(frameNumber)
        uncertaintyNs = parsed["uncertainty_ns"]?.unsignedValue
    }
}
