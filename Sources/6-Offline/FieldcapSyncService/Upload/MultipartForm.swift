import FoundationEssentials

/// A `multipart/form-data` body (RFC 7578) laid out before anything is sent: text fields and
/// files in order, with the exact length, so the upload can announce its Content-Length and
/// then stream each file from disk.
public struct MultipartForm: Sendable {
    public enum Piece: Sendable, Equatable {
        case bytes([UInt8])
        /// A file's first `size` bytes, read from disk as the body is sent.
        case file(path: String, size: Int64)
    }

    public let boundary: String
    public private(set) var pieces: [Piece] = []

    public init(boundary: String = "fieldcap-\(UInt64.random(in: 0...UInt64.max))-\(UInt64.random(in: 0...UInt64.max))")
    {
        self.boundary = boundary
    }

    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    public var length: Int64 {
        pieces.reduce(0) { total, piece in
            switch piece {
            case .bytes(let bytes): total + Int64(bytes.count)
            case .file(_, let size): total + size
            }
        }
    }

    public mutating func addField(_ name: String, _ value: String) {
        append("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(name))\"\r\n\r\n\(value)\r\n")
    }

    /// A file part; its size is read now, and the upload fails if the file changes before it
    /// is sent.
    public mutating func addFile(_ name: String, path: String, filename: String, contentType: String) throws {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        let size = Int64((attributes[.size] as? UInt) ?? 0)
        append(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(name))\"; "
                + "filename=\"\(Self.quoted(filename))\"\r\nContent-Type: \(contentType)\r\n\r\n"
        )
        pieces.append(.file(path: path, size: size))
        append("\r\n")
    }

    public mutating func finish() { append("--\(boundary)--\r\n") }

    private mutating func append(_ text: String) {
        if case .bytes(let last)? = pieces.last {
            pieces[pieces.count - 1] = .bytes(last + Array(text.utf8))
        } else {
            pieces.append(.bytes(Array(text.utf8)))
        }
    }

    /// A name or file name inside a quoted header parameter, escaped as browsers do (the
    /// WHATWG form encoding RFC 7578 points to): `"` and line breaks percent-encoded.
    static func quoted(_ text: String) -> String {
        // By scalar: `\r\n` is one Character, and each half is encoded.
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "%22"
            case "\r": escaped += "%0D"
            case "\n": escaped += "%0A"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// The MIME type a file is sent with, by its extension.
    public static func contentType(of path: String) -> String {
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "mkv": "video/x-matroska"
        case "mp4": "video/mp4"
        case "mov": "video/quicktime"
        case "jsonl", "ndjson": "application/x-ndjson"
        case "json": "application/json"
        case "tar": "application/x-tar"
        default: "application/octet-stream"
        }
    }
}
