import Testing

@testable import FieldcapYAML

@Suite("YAML documents through libyaml")
struct YAMLDocumentTests {
    func parse(_ text: String) throws -> YAMLNode {
        try #require(try YAMLDocument.parse(text))
    }

    func error(_ text: String) -> YAMLError? {
        do {
            _ = try YAMLDocument.parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test("a config's blocks: entries in the file's order, each node with its line, scalars as written")
    func blocks() throws {
        let root = try parse(
            "# a rig\nhost_id: rig_01\ncameras:\n  - device: /dev/video0\n"
                + "    rate: 30\n  - device: synthetic\nmin_free: ~\n"
        )
        guard case .mapping(let top) = root.content else { Issue.record("not a mapping: \(root)"); return }
        #expect(top.map(\.key.scalar) == ["host_id", "cameras", "min_free"])
        #expect(top.map(\.key.line) == [2, 3, 7])
        #expect(top[0].value.scalar == "rig_01")
        #expect(top[2].value.scalar == "~", "no implicit types: null stays the text the file holds")
        guard case .sequence(let cameras) = top[1].value.content else {
            Issue.record("cameras: \(top[1].value)"); return
        }
        #expect(cameras.map(\.line) == [4, 6])
        guard case .mapping(let first) = cameras[0].content else { Issue.record("camera: \(cameras[0])"); return }
        #expect(first.map { [$0.key.scalar, $0.value.scalar] } == [["device", "/dev/video0"], ["rate", "30"]])
        #expect(first.map(\.value.line) == [4, 5])
        #expect(root.tag == "tag:yaml.org,2002:map" && top[0].value.tag == "tag:yaml.org,2002:str")
    }

    @Test("flow style, quoting, block scalars and OpenCV's !!opencv-matrix tag")
    func styles() throws {
        let root = try parse(
            "m: !!opencv-matrix\n  rows: 1\n  data: [ 1., 6.57e+002, \"a, b\" ]\nq: 'it''s'\nb: |\n  two\n  lines\n")
        guard case .mapping(let top) = root.content else { Issue.record("not a mapping"); return }
        #expect(top[0].value.tag == "tag:yaml.org,2002:opencv-matrix")
        guard case .mapping(let matrix) = top[0].value.content, case .sequence(let data) = matrix[1].value.content
        else {
            Issue.record("matrix: \(top[0].value)")
            return
        }
        #expect(data.map(\.scalar) == ["1.", "6.57e+002", "a, b"])
        #expect(top[1].value.scalar == "it's")
        #expect(top[2].value.scalar == "two\nlines\n")
    }

    @Test("aliases are resolved to their anchor's node")
    func aliases() throws {
        let root = try parse("base: &b {rate: 100}\nimu: *b\n")
        guard case .mapping(let top) = root.content else { Issue.record("not a mapping"); return }
        #expect(top[1].value.content == top[0].value.content)
    }

    @Test("no document: nil")
    func empty() throws {
        #expect(try YAMLDocument.parse("") == nil)
        #expect(try YAMLDocument.parse("# only a comment\n\n") == nil)
    }

    @Test("a syntax error names libyaml's problem, its line and what it was reading")
    func syntax() throws {
        let indented = try #require(error("imus:\n  - device: synthetic\n   rate: 100\n"))
        guard case .syntax(let problem, let line, let context, let contextLine) = indented else {
            Issue.record("\(indented)")
            return
        }
        #expect(line == 3)
        #expect(!problem.isEmpty && context != nil && contextLine != nil, "\(indented)")
        #expect(error("imus: [\n")?.line == 2)
        #expect(error("a: *undefined\n")?.problem.contains("undefined alias") == true)
    }

    @Test("a key given twice in one block is an error at the first one's line, nested blocks included")
    func duplicates() {
        #expect(error("a: 1\nb: 2\na: 3\n") == .duplicateKeys(["a"], line: 1))
        #expect(error("x:\n  b: 1\n  a: 1\n  b: 2\n  a: 2\n") == .duplicateKeys(["a", "b"], line: 2))
        #expect(error("a: 1\n'a': 2\n") == .duplicateKeys(["a"], line: 1), "quoting does not make a key another")
        #expect(error("- a: 1\n- a: 2\n") == nil, "the same key in two blocks is fine")
    }

    @Test("a second document, and an alias inside its own anchor, are refused")
    func refused() {
        #expect(error("a: 1\n---\nb: 2\n") == .severalDocuments(line: 3))
        #expect(error("---\na: 1\n...\n") == nil, "one document between markers is one")
        let recursive = error("a: &x [1, *x]\n")
        #expect(
            recursive == .tooDeep(line: 1) || recursive?.problem.contains("alias") == true,
            "\(String(describing: recursive))")
    }
}
