import FieldcapCore
import FieldcapSession
import Foundation
import SyncField
import TestSupport
import Testing

@testable import FieldcapMedia

/// A seeded damage corpus (#42): one killed recording, damaged in many ways (truncations at and
/// between Cluster boundaries, byte flips in the Matroska header and anywhere, zeroed blocks,
/// cut and flipped JSON lines, deleted files), each run through validate and recover. Required:
/// no crash, one line for a failure, a refused recover changes nothing, and a recover that goes
/// ahead deletes no file and cuts from the video no more than a killed recorder can leave
/// unfinished. The seed is printed with each case: a failure names the one to replay.
@Suite("Damage corpus: validate and recover on damaged sessions")
struct DamageCorpusTests {
    static let format = VideoFormat(width: 64, height: 48, pixelFormat: .grey)

    /// The killed recording every case starts from: 40 frames, no manifest, state "recording".
    private static func killedSession() throws -> String {
        try KilledSession.make(frames: 40, firstNs: 5_000_000_000, name: "corpus-base")
    }

    /// One seeded damage to the session at `path`; returns what it did.
    private static func damage(_ path: String, seed: UInt64) throws -> String {
        var random = SplitMix64(seed: seed)
        let files = ["cam.mkv", "cam.timestamps.jsonl", "cam.frames.ndjson", "fieldcap.json"]
        let video = "\(path)/cam.mkv"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: video))
        var clusters: [Int] = []
        var from = bytes.startIndex
        while let found = bytes[from...].firstRange(of: Data([0x1F, 0x43, 0xB6, 0x75])) {
            clusters.append(found.lowerBound)
            from = found.upperBound
        }
        switch random.next() % 8 {
        case 0:
            let at = clusters.randomElement(using: &random)!
            bytes = bytes.prefix(at)
            try bytes.write(to: URL(fileURLWithPath: video))
            return "video cut at a Cluster boundary (\(at))"
        case 1:
            let at = Int.random(in: 0..<bytes.count, using: &random)
            try bytes.prefix(at).write(to: URL(fileURLWithPath: video))
            return "video cut at \(at)"
        case 2:
            let at = Int.random(in: 0..<min(bytes.count, clusters.first ?? 200), using: &random)
            bytes[at] ^= UInt8.random(in: 1...255, using: &random)
            try bytes.write(to: URL(fileURLWithPath: video))
            return "video header byte \(at) flipped"
        case 3:
            let at = Int.random(in: 0..<bytes.count, using: &random)
            bytes[at] ^= UInt8.random(in: 1...255, using: &random)
            try bytes.write(to: URL(fileURLWithPath: video))
            return "video byte \(at) flipped"
        case 4:
            let at = Int.random(in: 0..<bytes.count, using: &random)
            let end = min(bytes.count, at + 4096)
            bytes.replaceSubrange(at..<end, with: Data(count: end - at))
            try bytes.write(to: URL(fileURLWithPath: video))
            return "video bytes \(at)..<\(end) zeroed"
        case 5:
            let name = files.randomElement(using: &random)!
            try FileManager.default.removeItem(atPath: "\(path)/\(name)")
            return "\(name) deleted"
        case 6:
            let name = ["cam.timestamps.jsonl", "cam.frames.ndjson", "fieldcap.json"].randomElement(using: &random)!
            var text = try Data(contentsOf: URL(fileURLWithPath: "\(path)/\(name)"))
            guard !text.isEmpty else { return "\(name) empty, left" }
            let at = Int.random(in: 0..<text.count, using: &random)
            text[at] ^= UInt8.random(in: 1...255, using: &random)
            try text.write(to: URL(fileURLWithPath: "\(path)/\(name)"))
            return "\(name) byte \(at) flipped"
        default:
            let name = ["cam.timestamps.jsonl", "cam.frames.ndjson"].randomElement(using: &random)!
            let text = try Data(contentsOf: URL(fileURLWithPath: "\(path)/\(name)"))
            let at = Int.random(in: 0...text.count, using: &random)
            try (text.prefix(at) + Data("\r\n\u{FF}\u{FE}".utf8)).write(to: URL(fileURLWithPath: "\(path)/\(name)"))
            return "\(name) cut at \(at), CRLF and invalid UTF-8 appended"
        }
    }

    @Test(
        "60 seeded damages: no crash, one line, a refusal changes nothing, a recovery deletes nothing and cuts little")
    func corpus() throws {
        let base = try Self.killedSession()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let original = try Data(contentsOf: URL(fileURLWithPath: "\(base)/cam.mkv"))
        let allowance = CameraRecovery.tailAllowance(format: Self.format, nominalRate: 30, largestFrame: 64 * 48)
        var outcomes: [String: Int] = [:]
        for seed in UInt64(1)...60 {
            let path = NSTemporaryDirectory() + "/corpus-\(seed)-\(UUID().uuidString)"
            try FileManager.default.copyItem(atPath: base, toPath: path)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let what = try Self.damage(path, seed: seed)
            _ = SessionValidator.validateWithVideos(directory: path)
            let before = try KilledSession.contents(path)
            do {
                _ = try SessionFinisher.recover(directory: path) { _ in }
                let after = try KilledSession.contents(path)
                let lost = before.keys.filter { after[$0] == nil && $0 != ".fieldcap-reserve" }
                #expect(lost.isEmpty, "seed \(seed) (\(what)): recover deleted \(lost)")
                if let videoBefore = before["cam.mkv"], let videoAfter = after["cam.mkv"] {
                    let cut = videoBefore.count - min(videoBefore.count, videoAfter.count)
                    #expect(UInt64(cut) <= allowance, "seed \(seed) (\(what)): recover cut \(cut) bytes of the video")
                }
                outcomes["recovered", default: 0] += 1
            } catch let refusal as CameraRecovery.Refusal {
                #expect(
                    try KilledSession.contents(path) == before, "seed \(seed) (\(what)): refused, but changed files")
                #expect(!"\(refusal)".contains("\n"))
                outcomes["refused", default: 0] += 1
            } catch {
                #expect(!"\(error)".contains("\n"), "seed \(seed) (\(what)): \(error)")
                outcomes["failed: \(type(of: error))", default: 0] += 1
            }
        }
        #expect(original.count > 40 * 64 * 48)
        print("damage corpus: \(outcomes.sorted { $0.key < $1.key })")
    }
}

extension DamageCorpusTests {
    @Test("the tail a kill can leave, from a sidecar's absurd rate or frame size, saturates instead of trapping")
    func tailAllowanceFromHostileNumbers() {
        let normal = CameraRecovery.tailAllowance(format: Self.format, nominalRate: 30, largestFrame: 64 * 48)
        #expect(normal == (64 * 48 + 8192) * 60 + 65536)
        for rate in [Double.infinity, -Double.infinity, .nan, 1e20, -5] {
            _ = CameraRecovery.tailAllowance(format: Self.format, nominalRate: rate, largestFrame: 64 * 48)
        }
        #expect(CameraRecovery.tailAllowance(format: Self.format, nominalRate: 1e20, largestFrame: .max) == .max)
        #expect(CameraRecovery.tailAllowance(format: Self.format, nominalRate: 30, largestFrame: .max - 100) == .max)
    }
}
