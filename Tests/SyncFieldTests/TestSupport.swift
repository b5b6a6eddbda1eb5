import Foundation

@testable import SyncField

/// A fresh directory under the system temp folder, removed when the value is dropped.
final class TemporaryDirectory {
    let path: String
    var url: URL { URL(fileURLWithPath: path) }

    init(_ label: String = "syncfield") {
        let template = NSTemporaryDirectory() + "/\(label)-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { fatalError("mkdtemp failed: errno \(errno)") }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: file(name)).map { String(decoding: $0, as: UTF8.self) }
    }

    func lines(_ name: String) -> [String] {
        guard let text = read(name) else { return [] }
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: file(name)) }
}

/// What the SDK writes for a line: `JSONSerialization` with `.sortedKeys`, plus a newline.
func foundationLine(_ object: [String: Any]) throws -> String {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    return String(decoding: data, as: UTF8.self)
}

/// What the SDK writes for a pretty file.
func foundationPretty(_ object: [String: Any]) throws -> String {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    return String(decoding: data, as: UTF8.self).replacingOccurrences(of: " : ", with: ": ") + "\n"
}
