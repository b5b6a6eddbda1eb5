import FieldcapCore
import Foundation

extension JSONValue {
    /// The value as `JSONSerialization` takes it: Foundation is the tests' oracle for the text
    /// fieldcap's own writers spell.
    public var foundationObject: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let flag): return flag
        case .integer(let number): return number
        case .unsigned(let number): return number
        case .double(let number): return number
        case .string(let text): return text
        case .array(let values): return values.map(\.foundationObject)
        case .object(let members): return members.mapValues(\.foundationObject)
        }
    }
}
