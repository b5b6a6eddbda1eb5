import FieldcapPreview
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /api/v1/preview/{stream}.jpg` and `.mjpg`: a camera's preview as one JPEG, or as MJPEG
/// over HTTP (`multipart/x-mixed-replace`, which a browser's `<img>`, VLC and ffplay show).
enum PreviewResponses {
    static let boundary = "fieldcapframe"

    enum Kind: String { case jpg, mjpg }

    /// The stream and kind a file name asks for (`cam0.mjpg`), or the API error saying why not.
    static func resolve(_ file: String, in previews: Previews) throws -> (PreviewStream, Kind) {
        let dot = file.lastIndex(of: ".")
        guard let dot, let kind = Kind(rawValue: String(file[file.index(after: dot)...])) else {
            throw APIError(.notFound, "preview '\(file.printable)' is not STREAM.jpg or STREAM.mjpg")
        }
        let id = String(file[..<dot])
        if let stream = previews.streams[id] { return (stream, kind) }
        if let why = previews.unavailable[id] { throw APIError(.notFound, "\(id) has no preview: \(why)") }
        let known = previews.streams.keys.sorted()
        throw APIError(
            .notFound,
            "no camera '\(id.printable)' on this rig"
                + (known.isEmpty
                    ? " (it has no camera with a preview)" : ": previews are \(known.joined(separator: ", "))"))
    }

    static func headers(_ contentType: String, _ frame: PreviewFrame? = nil) -> HTTPFields {
        var fields: HTTPFields = [.contentType: contentType, .cacheControl: "no-store"]
        if let frame {
            fields[HTTPField.Name("X-Capture-Ns")!] = String(frame.captureNs)
            fields[HTTPField.Name("X-Frame-Sequence")!] = String(frame.sequence)
        }
        return fields
    }

    /// One JPEG, at most a second old; 503 when the camera gave none within 5 s.
    static func snapshot(_ stream: PreviewStream, problem: String?) async throws -> Response {
        guard let frame = await stream.snapshot(maxAge: 1, timeout: 5) else {
            throw APIError(
                .serviceUnavailable,
                "no frame from \(stream.id) within 5 s" + (problem.map { ": \($0)" } ?? ": is the camera delivering?"))
        }
        return Response(
            status: .ok, headers: headers("image/jpeg", frame),
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: frame.jpeg)))
    }

    /// Every preview frame as a part of its own, until the client leaves.
    static func motionJPEG(_ stream: PreviewStream, channel: any Channel) -> Response {
        Response(
            status: .ok, headers: headers("multipart/x-mixed-replace; boundary=\(boundary)"),
            body: ResponseBody { writer in
                // The preview's frames are pumped into a stream of this response's own, which the
                // connection's close ends: the viewer is gone the moment its client is, also
                // while the camera sends nothing to write.
                let (frames, relay) = AsyncStream.makeStream(
                    of: PreviewFrame.self, bufferingPolicy: .bufferingNewest(1))
                let pump = Task {
                    for await frame in stream.frames() { relay.yield(frame) }
                    relay.finish()
                }
                channel.closeFuture.whenComplete { _ in
                    pump.cancel()
                    relay.finish()
                }
                defer { pump.cancel() }
                for await frame in frames {
                    try await writer.write(part(frame))
                }
                try await writer.finish(nil)
            })
    }

    static func part(_ frame: PreviewFrame) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(frame.jpeg.count + 160)
        buffer.writeString(
            "--\(boundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(frame.jpeg.count)\r\n"
                + "X-Capture-Ns: \(frame.captureNs)\r\n\r\n")
        buffer.writeBytes(frame.jpeg)
        buffer.writeString("\r\n")
        return buffer
    }
}
