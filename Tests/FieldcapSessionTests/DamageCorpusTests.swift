import FieldcapCore
import FieldcapSession
import Foundation
import SyncField
import TestSupport
import Testing

@testable import FieldcapMedia

/// A seeded damage corpus (#42): one killed recording, damaged in many ways (TestSupport's
/// SessionDamage: truncations at and between Cluster boundaries, byte flips in the Matroska
/// header and anywhere, zeroed blocks, cut and flipped JSON lines, absurd numbers, deleted files,
/// links outside), each run through validate and recover in-process. Required: no crash, one line
/// for a failure, a refused recover changes nothing, and a recover that goes ahead deletes no file,
/// cuts from the video no more than a killed recorder can leave unfinished, and writes nothing
/// outside. The seed is printed with each case: a failure names the one to replay. The same
/// damage on the command line, on JPEG, FFV1 and segmented recordings: DamageCorpusCommandTests.
@Suite("Damage corpus: validate and recover on damaged sessions")
struct DamageCorpusTests {
    static let format = VideoFormat(width: 64, height: 48, pixelFormat: .grey)

    /// The killed recording every case starts from: 40 frames, no manifest, state "recording".
    private static func killedSession() throws -> String {
        try KilledSession.make(frames: 40, firstNs: 5_000_000_000, name: "corpus-base")
    }

    @Test(
        "60 seeded damages: no crash, one line, a refusal changes nothing, a recovery deletes nothing and cuts little")
    func corpus() throws {
        let base = try Self.killedSession()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let original = try Data(contentsOf: URL(fileURLWithPath: "\(base)/cam.mkv"))
        let allowance = CameraRecovery.tailAllowance(format: Self.format, nominalRate: 30, largestFrame: 64 * 48)
        var outcomes: [String: Int] = [:]
        let outside = NSTemporaryDirectory() + "/corpus-outside-\(UUID().uuidString)"
        try Data("not the session's".utf8).write(to: URL(fileURLWithPath: outside))
        defer { try? FileManager.default.removeItem(atPath: outside) }
        for seed in UInt64(1)...60 {
            let path = NSTemporaryDirectory() + "/corpus-\(seed)-\(UUID().uuidString)"
            try FileManager.default.copyItem(atPath: base, toPath: path)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let what = try SessionDamage.apply(to: path, seed: seed, outside: outside)
            defer {
                #expect((try? Data(contentsOf: URL(fileURLWithPath: outside))) == Data("not the session's".utf8))
            }
            _ = SessionValidator.validateWithVideos(directory: path)
            let before = try SessionDamage.contents(path)
            do {
                _ = try SessionFinisher.recover(directory: path) { _ in }
                let after = try SessionDamage.contents(path)
                let lost = before.keys.filter { after[$0] == nil && $0 != ".fieldcap-reserve" }
                #expect(lost.isEmpty, "seed \(seed) (\(what)): recover deleted \(lost)")
                if let videoBefore = before["cam.mkv"], let videoAfter = after["cam.mkv"] {
                    let cut = videoBefore.count - min(videoBefore.count, videoAfter.count)
                    #expect(UInt64(cut) <= allowance, "seed \(seed) (\(what)): recover cut \(cut) bytes of the video")
                }
                outcomes["recovered", default: 0] += 1
            } catch let refusal as CameraRecovery.Refusal {
                #expect(
                    try SessionDamage.contents(path) == before, "seed \(seed) (\(what)): refused, but changed files")
                #expect(!"\(refusal)".contains("\n"))
                outcomes["refused", default: 0] += 1
            } catch {
                #expect(!"\(error)".contains("\n"), "seed \(seed) (\(what)): \(error)")
                // What recover cannot do is found before it changes anything, not half-way.
                #expect(try SessionDamage.contents(path) == before, "seed \(seed) (\(what)): failed half-way: \(error)")
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
