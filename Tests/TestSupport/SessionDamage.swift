import Foundation

/// The damage corpus's generator (#42): one seeded damage to a session or a segmented recording,
/// as a power cut, a bad card, a careless copy or a hostile hand would leave it. It works on
/// whatever files the directory holds (every camera's video, every JSON and line file, a
/// recording's segments), so a session of any kind (raw, JPEG, FFV1, segmented, killed) goes
/// through the same kinds of damage. The seed picks the damage and the file: a failure names
/// the seed to replay.
public enum SessionDamage {
    /// The kinds, in the order a seed picks them.
    public static let kinds = [
        "video cut at a Cluster", "video cut anywhere", "video header byte flipped", "video byte flipped",
        "video block zeroed", "file deleted", "JSON byte flipped", "lines cut, CRLF and invalid UTF-8 appended",
        "video replaced by another", "absurd number", "file replaced by a link outside",
    ]

    /// Damages the session or recording at `path`; returns what it did, naming the file.
    /// `outside` is a file outside `path` that a link may point at: whatever runs on the damaged
    /// session must leave it as it was.
    public static func apply(to path: String, seed: UInt64, outside: String) throws -> String {
        var random = SplitMix64(seed: seed)
        let files = try everyFile(under: path)
        guard !files.isEmpty else { return "no file to damage" }
        let videos = files.filter { $0.hasSuffix(".mkv") }
        let texts = files.filter { $0.hasSuffix(".json") || $0.hasSuffix(".jsonl") || $0.hasSuffix(".ndjson") }
        func shown(_ file: String) -> String { String(file.dropFirst(path.count + 1)) }
        let kind = Int(random.next() % UInt64(kinds.count))
        switch kind {
        case 0...4 where !videos.isEmpty:
            let video = videos.randomElement(using: &random)!
            var bytes = try Data(contentsOf: URL(fileURLWithPath: video))
            guard !bytes.isEmpty else { return "\(shown(video)) empty, left" }
            let clusters = offsets(of: [0x1F, 0x43, 0xB6, 0x75], in: bytes)
            let what: String
            switch kind {
            case 0:
                let at = clusters.randomElement(using: &random) ?? bytes.count / 2
                bytes = bytes.prefix(at)
                what = "cut at a Cluster boundary (\(at))"
            case 1:
                let at = Int.random(in: 0..<bytes.count, using: &random)
                bytes = bytes.prefix(at)
                what = "cut at \(at)"
            case 2:
                let at = Int.random(in: 0..<min(bytes.count, clusters.first ?? 200), using: &random)
                bytes[at] ^= UInt8.random(in: 1...255, using: &random)
                what = "header byte \(at) flipped"
            case 3:
                let at = Int.random(in: 0..<bytes.count, using: &random)
                bytes[at] ^= UInt8.random(in: 1...255, using: &random)
                what = "byte \(at) flipped"
            default:
                let at = Int.random(in: 0..<bytes.count, using: &random)
                let end = min(bytes.count, at + 4096)
                bytes.replaceSubrange(at..<end, with: Data(count: end - at))
                what = "bytes \(at)..<\(end) zeroed"
            }
            try bytes.write(to: URL(fileURLWithPath: video))
            return "\(shown(video)) \(what)"
        case 5:
            let file = files.randomElement(using: &random)!
            try FileManager.default.removeItem(atPath: file)
            return "\(shown(file)) deleted"
        case 6 where !texts.isEmpty:
            let file = texts.randomElement(using: &random)!
            var text = try Data(contentsOf: URL(fileURLWithPath: file))
            guard !text.isEmpty else { return "\(shown(file)) empty, left" }
            let at = Int.random(in: 0..<text.count, using: &random)
            text[at] ^= UInt8.random(in: 1...255, using: &random)
            try text.write(to: URL(fileURLWithPath: file))
            return "\(shown(file)) byte \(at) flipped"
        case 7 where !texts.isEmpty:
            let file = texts.randomElement(using: &random)!
            let text = try Data(contentsOf: URL(fileURLWithPath: file))
            let at = Int.random(in: 0...text.count, using: &random)
            try (text.prefix(at) + Data("\r\n\u{FF}\u{FE}".utf8)).write(to: URL(fileURLWithPath: file))
            return "\(shown(file)) cut at \(at), CRLF and invalid UTF-8 appended"
        case 8 where videos.count > 1:
            // A copy gone wrong: one camera's video where another's should be.
            let pair = Array(videos.shuffled(using: &random).prefix(2))
            try FileManager.default.removeItem(atPath: pair[1])
            try FileManager.default.copyItem(atPath: pair[0], toPath: pair[1])
            return "\(shown(pair[1])) replaced by a copy of \(shown(pair[0]))"
        case 9 where !texts.isEmpty:
            let file = texts.randomElement(using: &random)!
            let text = try String(decoding: Data(contentsOf: URL(fileURLWithPath: file)), as: UTF8.self)
            let numbers = try NSRegularExpression(pattern: "-?[0-9]+(\\.[0-9]+)?")
                .matches(in: text, range: NSRange(text.startIndex..., in: text))
            guard let number = numbers.randomElement(using: &random), let range = Range(number.range, in: text) else {
                return "\(shown(file)) has no number, left"
            }
            let absurd = ["9223372036854775807", "18446744073709551616", "-1", "0", "1e308", "-0.0", "NaN"]
                .randomElement(using: &random)!
            try (text.replacingCharacters(in: range, with: absurd)).write(
                toFile: file, atomically: false, encoding: .utf8)
            return "\(shown(file)): \(text[range]) at \(number.range.location) became \(absurd)"
        case 10:
            let file = files.randomElement(using: &random)!
            try FileManager.default.removeItem(atPath: file)
            try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: outside)
            return "\(shown(file)) replaced by a link to a file outside"
        default:
            // The kind needs a file the session does not have: the next seed's kind instead.
            return try apply(to: path, seed: seed &+ 0x1_0000_0000, outside: outside)
        }
    }

    /// Every regular file under `path`, sorted (the seed must pick the same one on every machine),
    /// but the recorder's disk reserve.
    public static func everyFile(under path: String) throws -> [String] {
        var found: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: path)
        while let relative = enumerator?.nextObject() as? String {
            let full = "\(path)/\(relative)"
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue,
                !relative.hasSuffix(".fieldcap-reserve")
            else { continue }
            found.append(full)
        }
        return found.sorted()
    }

    /// Every file under `path` and its bytes (links as where they point): what a command changed.
    public static func contents(_ path: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: path)
        while let relative = enumerator?.nextObject() as? String {
            let full = "\(path)/\(relative)"
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: full) {
                files[relative] = Data("-> \(target)".utf8)
                continue
            }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
                files[relative] = try Data(contentsOf: URL(fileURLWithPath: full))
            }
        }
        return files
    }

    static func offsets(of pattern: [UInt8], in bytes: Data) -> [Int] {
        var found: [Int] = []
        var from = bytes.startIndex
        while let range = bytes[from...].firstRange(of: Data(pattern)) {
            found.append(range.lowerBound)
            from = range.upperBound
        }
        return found
    }
}
