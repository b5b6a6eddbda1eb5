import FieldcapCore
import FoundationEssentials

/// What the rig sends the capture server: its name on connecting (the AllSpark iOS app's
/// `clientInfo`), a status answering each message (the protocol's own `{"status","message"}`
/// shape, with what it answers), and an upload's metadata before its binary message.
public enum ClientMessage {
    public static func clientInfo(name: String) -> String {
        json(["type": "clientInfo", "clientName": name])
    }

    /// `answering`: the command or message type it answers.
    public static func status(success: Bool, message: String, answering: String) -> String {
        json(["status": success ? "success" : "error", "message": message, "command": answering])
    }

    /// The two-phase upload's first message.
    public static func uploadMetadata(filename: String, filesize: Int64, mimetype: String) -> String {
        json(["filename": filename, "filesize": filesize, "mimetype": mimetype])
    }

    private static func json(_ object: [String: Any]) -> String {
        // Strings and integers only: always encodable.
        PlainJSON.text(object, escapingSlashes: false)!
    }
}
