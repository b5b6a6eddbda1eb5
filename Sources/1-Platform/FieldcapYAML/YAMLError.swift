/// Why a YAML text could not be read, with the line to look at (1-based).
public enum YAMLError: Error, Sendable, Equatable {
    /// libyaml's own problem (`did not find expected key`), and what it was reading when it
    /// found it (`while parsing a block mapping`, at `contextLine`).
    case syntax(problem: String, line: Int, context: String?, contextLine: Int?)
    /// Keys given more than once in one mapping, sorted; `line` is the first one's first.
    case duplicateKeys([String], line: Int)
    /// Aliases nested deeper than a configuration ever is (or an alias inside its own anchor).
    case tooDeep(line: Int)
    /// More than one document in the text (`---` between them).
    case severalDocuments(line: Int)

    public var line: Int {
        switch self {
        case .syntax(_, let line, _, _), .duplicateKeys(_, let line), .tooDeep(let line), .severalDocuments(let line):
            line
        }
    }

    /// What went wrong, without the file and line (the caller names those).
    public var problem: String {
        switch self {
        case .syntax(let problem, _, let context, let contextLine):
            problem + (context.map { c in " (\(c)\(contextLine.map { " at line \($0)" } ?? ""))" } ?? "")
        case .duplicateKeys(let keys, _):
            keys.map { String(reflecting: $0) }.joined(separator: ", ") + " given twice in the same block"
        case .tooDeep:
            "nested more than \(YAMLDocument.maximumDepth) levels deep (an alias inside its own anchor?)"
        case .severalDocuments:
            "a second document ('---'); give one"
        }
    }
}
