import CYAML

/// Reads YAML text with libyaml's composer: the one document's root node, aliases resolved,
/// every node with its line.
public enum YAMLDocument {
    /// Deeper than any configuration or calibration nests; an alias that refers to the
    /// mapping it sits in would otherwise recurse for ever.
    public static let maximumDepth = 64

    /// The text's root node; nil when the text holds no document (empty, or comments only).
    public static func parse(_ text: String) throws(YAMLError) -> YAMLNode? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) != 0 else {
            // Only a failed allocation gets here.
            throw .syntax(problem: "libyaml could not start (out of memory)", line: 1, context: nil, contextLine: nil)
        }
        defer { yaml_parser_delete(&parser) }
        var bytes = Array(text.utf8)
        return try bytes.withUnsafeMutableBufferPointer { buffer throws(YAMLError) -> YAMLNode? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            let root = try load(&parser) { document throws(YAMLError) in
                guard let root = yaml_document_get_root_node(&document) else { return nil as YAMLNode? }
                return try node(root, in: &document, depth: 0)
            }
            let second = try load(&parser) { document in
                yaml_document_get_root_node(&document).map { Int($0.pointee.start_mark.line) + 1 }
            }
            if let line = second { throw .severalDocuments(line: line) }
            return root
        }
    }

    /// Loads the parser's next document and hands it to `body`; the document is freed after.
    private static func load<T>(
        _ parser: inout yaml_parser_t, _ body: (inout yaml_document_t) throws(YAMLError) -> T
    ) throws(YAMLError) -> T {
        var document = yaml_document_t()
        guard yaml_parser_load(&parser, &document) != 0 else { throw syntaxError(parser) }
        defer { yaml_document_delete(&document) }
        return try body(&document)
    }

    private static func syntaxError(_ parser: yaml_parser_t) -> YAMLError {
        let problem = parser.problem.map { String(cString: $0) } ?? "not valid YAML"
        let context = parser.context.map { String(cString: $0) }
        return .syntax(
            problem: problem, line: Int(parser.problem_mark.line) + 1, context: context,
            contextLine: context == nil ? nil : Int(parser.context_mark.line) + 1)
    }

    private static func node(
        _ pointer: UnsafeMutablePointer<yaml_node_t>, in document: inout yaml_document_t, depth: Int
    ) throws(YAMLError) -> YAMLNode {
        let raw = pointer.pointee
        let line = Int(raw.start_mark.line) + 1
        guard depth < maximumDepth else { throw .tooDeep(line: line) }
        let tag = raw.tag.map { String(cString: $0) } ?? ""
        func child(_ index: Int32) throws(YAMLError) -> YAMLNode {
            // libyaml's composer only makes indexes of nodes it made.
            let pointer = yaml_document_get_node(&document, index)!
            return try node(pointer, in: &document, depth: depth + 1)
        }
        switch raw.type {
        case YAML_SCALAR_NODE:
            let value = UnsafeBufferPointer(start: raw.data.scalar.value, count: raw.data.scalar.length)
            return YAMLNode(.scalar(String(decoding: value, as: UTF8.self)), tag: tag, line: line)
        case YAML_SEQUENCE_NODE:
            var items: [YAMLNode] = []
            var item = raw.data.sequence.items.start
            while let current = item, current != raw.data.sequence.items.top {
                items.append(try child(current.pointee))
                item = current + 1
            }
            return YAMLNode(.sequence(items), tag: tag, line: line)
        case YAML_MAPPING_NODE:
            var entries: [YAMLNode.Entry] = []
            var pair = raw.data.mapping.pairs.start
            while let current = pair, current != raw.data.mapping.pairs.top {
                entries.append(
                    YAMLNode.Entry(key: try child(current.pointee.key), value: try child(current.pointee.value)))
                pair = current + 1
            }
            try checkUnique(entries)
            return YAMLNode(.mapping(entries), tag: tag, line: line)
        default:
            return YAMLNode(.scalar(""), tag: tag, line: line)
        }
    }

    /// A mapping's keys must differ (YAML says so; libyaml leaves it to the application).
    /// Scalar keys are compared, by text and tag: the keys of a config or calibration.
    private static func checkUnique(_ entries: [YAMLNode.Entry]) throws(YAMLError) {
        struct Key: Hashable {
            var text: String
            var tag: String
        }
        var firstLine: [Key: Int] = [:]
        var duplicates: [Key: Int] = [:]
        for entry in entries {
            guard let text = entry.key.scalar else { continue }
            let key = Key(text: text, tag: entry.key.tag)
            if let line = firstLine[key] {
                duplicates[key] = line
            } else {
                firstLine[key] = entry.key.line
            }
        }
        guard let first = duplicates.min(by: { ($0.value, $0.key.text) < ($1.value, $1.key.text) }) else { return }
        throw .duplicateKeys(duplicates.keys.map(\.text).sorted(), line: first.value)
    }
}
