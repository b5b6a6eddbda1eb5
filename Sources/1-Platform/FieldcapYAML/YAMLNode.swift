/// A YAML node as read from a file: its content, its tag and the line it starts on, so that a
/// reader can name the line of every value it rejects.
public struct YAMLNode: Sendable, Equatable {
    public enum Content: Sendable, Equatable {
        /// A scalar's text as written (no implicit types: `1`, `~` and `.inf` are text here,
        /// for the reader to interpret where it knows what the value means).
        case scalar(String)
        case sequence([YAMLNode])
        /// Entries in the file's order; no key appears twice (the parser refuses that).
        case mapping([Entry])
    }

    public struct Entry: Sendable, Equatable {
        public var key: YAMLNode
        public var value: YAMLNode

        public init(key: YAMLNode, value: YAMLNode) {
            self.key = key
            self.value = value
        }
    }

    public var content: Content
    /// The resolved tag: `tag:yaml.org,2002:str`, `...:seq` and `...:map` for untagged nodes,
    /// `tag:yaml.org,2002:opencv-matrix` for OpenCV's `!!opencv-matrix`.
    public var tag: String
    /// 1-based.
    public var line: Int

    public init(_ content: Content, tag: String, line: Int) {
        self.content = content
        self.tag = tag
        self.line = line
    }

    /// The text of a scalar; nil for a sequence or mapping.
    public var scalar: String? {
        if case .scalar(let text) = content { return text }
        return nil
    }
}
