import FieldcapCore
import FieldcapSegments
import FieldcapSession
import Foundation
import SyncField
import TestSupport
import Testing

@testable import FieldcapArchive

/// A recording's segments are its own directories. One that is a symbolic link, or an index
/// that names a segment outside the recording, leads elsewhere: recover, validate and extract
/// must neither write nor read there (#42).
@Suite("a recording whose segment is a link, or whose index names a segment outside it")
struct LinkedSegmentTests {
    /// The copied recording with its last segment moved outside the root and a link left in its
    /// place, the index saying it was being recorded (as after a crash); and where it went.
    private func linkedRecording() throws -> (RecordingFixture.Recorded, outside: String, segment: String) {
        let copied = try RecordingFixture.copy()
        var index = try #require(RecordingIndex.read(directory: copied.directory))
        let last = try #require(index.segments.indices.last)
        let segment = index.segments[last].directory
        let outside = RecordingFixture.temporary("outside")
        try FileManager.default.moveItem(atPath: "\(copied.directory)/\(segment)", toPath: outside)
        try FileManager.default.createSymbolicLink(
            atPath: "\(copied.directory)/\(segment)", withDestinationPath: outside)
        index.segments[last].state = .recording
        index.state = "recording"
        try index.write(directory: copied.directory)
        return (copied, outside, segment)
    }

    @Test("recover refuses before changing anything; validate and extract do not follow the link")
    func linkedSegment() throws {
        let (copied, outside, segment) = try linkedRecording()
        defer {
            try? FileManager.default.removeItem(atPath: copied.root)
            try? FileManager.default.removeItem(atPath: outside)
        }
        let before = try SessionDamage.contents(outside)
        let indexBefore = FileManager.default.contents(atPath: "\(copied.directory)/\(RecordingIndex.fileName)")
        #expect {
            _ = try RecordingRecovery.recover(directory: copied.directory, say: { _ in })
        } throws: { error in
            "\(error)".hasSuffix(
                "\(segment) is a symbolic link, not a directory of the recording; nothing recovered or changed")
        }
        #expect(try SessionDamage.contents(outside) == before)
        #expect(FileManager.default.contents(atPath: "\(copied.directory)/\(RecordingIndex.fileName)") == indexBefore)

        let report = try #require(RecordingValidator.validate(directory: copied.directory))
        #expect(
            report.problems.contains("\(segment): is a symbolic link, not a directory of the recording (not followed)"))

        // The index says complete again: extract still refuses to read through the link.
        var index = try #require(RecordingIndex.read(directory: copied.directory))
        for position in index.segments.indices { index.segments[position].state = .complete }
        index.state = "complete"
        try index.write(directory: copied.directory)
        let start = try #require(UTCTime.parse(index.segments[0].startUtc))
        let out = RecordingFixture.temporary("extract-linked")
        defer { try? FileManager.default.removeItem(atPath: out) }
        #expect {
            try RangeExtractor.extract(
                RangeExtractor.Request(source: copied.directory, fromNs: start, toNs: start + 60_000_000_000, out: out))
        } throws: { error in
            "\(error)".contains("\(segment) is a symbolic link, not a directory of the recording")
        }
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test("an index naming a segment '../x', '/etc' or '.' is not read as a recording's")
    func segmentOutside() throws {
        let copied = try RecordingFixture.copy()
        defer { try? FileManager.default.removeItem(atPath: copied.root) }
        let original = try #require(RecordingIndex.read(directory: copied.directory))
        for name in ["../x", "/etc", ".", "..", "", "a/b"] {
            var index = original
            index.segments[0].directory = name
            try index.write(directory: copied.directory)
            #expect(RecordingIndex.read(directory: copied.directory) == nil, "'\(name)'")
        }
        try original.write(directory: copied.directory)
        #expect(RecordingIndex.read(directory: copied.directory) != nil)
    }
}
