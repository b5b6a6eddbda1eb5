import FieldcapSystem
import Testing

@testable import SyncField

@Suite("Path names")
struct PathNameTests {
    @Test("split at the last slash as dirname and basename do, short names included (Foundation's trap on them)")
    func split() {
        let cases: [(path: String, directory: String, base: String)] = [
            ("c", "", "c"), ("ab", "", "ab"), ("a/b", "a", "b"), ("/b", "/", "b"), ("a/b/", "a", "b"),
            ("/x/y/z", "/x/y", "z"), ("/", "/", "/"), ("a//b", "a", "b"), ("./c", ".", "c"),
        ]
        for (path, directory, base) in cases {
            #expect(PathName.directory(of: path) == directory, "\(path)")
            #expect(PathName.base(of: path) == base, "\(path)")
        }
    }
}
