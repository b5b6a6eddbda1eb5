import FieldcapArchive
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A session archived while fieldcap rewrites a file in it (check-sync's sidecar, replaced whole):
/// each file goes into the tar as it is when it is read, its header sized so.
@Suite("tar of a directory that changes while it is archived")
struct TarStreamTests {
    @Test("a file replaced whole after the listing is sent whole at its new size; one gone is left out")
    func replacedAndVanished() throws {
        let directory = NSTemporaryDirectory() + "/tar-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("{\"a\":1}\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/fieldcap.json"))
        try Data("temporary".utf8).write(to: URL(fileURLWithPath: "\(directory)/fieldcap.json.tmp"))
        var links: [String] = []
        let entries = try TarStream.entries(directory: directory, prefix: "s", links: &links)
        #expect(entries.map(\.size) == [8, 9])
        // As AtomicFile replaces the sidecar: a longer one renamed over it, its .tmp gone.
        let longer = "{\"a\":1,\"sync_check\":{}}\n"
        try Data(longer.utf8).write(to: URL(fileURLWithPath: "\(directory)/fieldcap.json.tmp"))
        #expect(rename("\(directory)/fieldcap.json.tmp", "\(directory)/fieldcap.json") == 0)
        let (fd, entry) = try #require(try TarStream.open(entries[0]))
        defer { close(fd) }
        #expect(entry.size == UInt64(longer.utf8.count))
        #expect(try TarStream.open(entries[1]) == nil, "a file gone since the listing is left out")

        // TarFile (what an upload sends) opens each file the same way: GNU tar reads it back whole.
        let tar = NSTemporaryDirectory() + "/tar-\(UUID().uuidString).tar"
        defer { try? FileManager.default.removeItem(atPath: tar) }
        _ = try TarFile.write(directory: directory, name: "s", to: tar)
        let listing = Process()
        listing.executableURL = URL(fileURLWithPath: "/usr/bin/tar")
        listing.arguments = ["-xOf", tar, "s/fieldcap.json"]
        let out = Pipe()
        listing.standardOutput = out
        try listing.run()
        let content = out.fileHandleForReading.readDataToEndOfFile()
        listing.waitUntilExit()
        #expect(listing.terminationStatus == 0 && String(decoding: content, as: UTF8.self) == longer)
    }
}
