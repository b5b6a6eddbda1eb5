import FieldcapCore
import FoundationEssentials

/// What the rig sends the capture server, as the AllSpark app sends it: its name on connecting
/// (`clientInfo`), `chunkSaved` as each segment closes, and an upload's metadata before its
/// binary message. Nothing answers the server's commands: its server takes any message
/// without a known `type` as an error ("Unknown message type").
public enum ClientMessage {
    public static func clientInfo(name: String) -> String {
        json(["type": "clientInfo", "clientName": .string(name)])
    }

    /// The two-phase upload's first message, the app's `uploadVideo` fields.
    public static func uploadMetadata(filename: String, filesize: Int64, mimetype: String) -> String {
        json([
            "type": "upload", "filename": .string(filename), "filesize": JSONValue(filesize),
            "mimetype": .string(mimetype),
        ])
    }

    /// A finished segment, the app's fields: its wall-clock range in Unix seconds, the camera,
    /// its bytes, the video's format and rate, and the frame size when known.
    public static func chunkSaved(
        startTime: Double, endTime: Double, camera: String, size: Int64, format: String, fps: Double,
        width: Int?, height: Int?
    ) -> String {
        var object: [String: JSONValue] = [
            "type": "chunkSaved", "startTime": .double(startTime), "endTime": .double(endTime),
            "camera": .string(camera), "size": JSONValue(size), "format": .string(format), "fps": .double(fps),
        ]
        if let width, let height {
            object["dimensions"] = ["width": .double(Double(width)), "height": .double(Double(height))]
        }
        return json(object)
    }

    private static func json(_ object: [String: JSONValue]) -> String {
        // Strings and numbers only: always encodable.
        JSONValue.object(object).compactText(escapingSlashes: false)!
    }
}
