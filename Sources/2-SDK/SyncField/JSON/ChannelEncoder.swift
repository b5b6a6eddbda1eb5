import FieldcapOutput

/// Encodes a `record()` call's channels exactly as `JSONSerialization` with `.sortedKeys` would.
///
/// Sorting keys with Foundation's comparison costs microseconds, and a stream sends the same key
/// set with every record. So the encoder remembers, per stream and per dictionary position in the
/// walk, the sorted keys and their encoded spellings, and re-sorts only when a record's keys
/// differ from the remembered ones.
///
/// Thread-bound (writer).
final class ChannelEncoder {
    /// The remembered order of one dictionary's keys.
    final class KeyPlan {
        let sortedKeys: [String]
        /// `"key":` for each sorted key, already escaped.
        let encodedKeys: [[UInt8]]

        init<S: Sequence>(keys: S) where S.Element == String {
            sortedKeys = JSONKeyOrder.sorted(keys)
            encodedKeys = sortedKeys.map { OutputBytes.jsonStringLiteral($0) + [UInt8(ascii: ":")] }
        }
    }

    /// The plans of one stream, in the order dictionaries are met while encoding a record.
    final class PlanCache {
        var plans: [KeyPlan?] = []
        var cursor = 0
    }

    private let out: OutputBytes

    init(out: OutputBytes) { self.out = out }

    /// Appends `channels` (validated by `ChannelValues`) to the output.
    func encode(_ channels: [String: Any], cache: PlanCache) {
        cache.cursor = 0
        encodeObject(channels, cache: cache) { encodeValue($0, cache: cache) }
    }

    private func nextPlan<V>(for object: [String: V], cache: PlanCache) -> (index: Int, plan: KeyPlan?) {
        let index = cache.cursor
        cache.cursor += 1
        if index == cache.plans.count { cache.plans.append(nil) }
        let plan = cache.plans[index]
        return (index, plan?.sortedKeys.count == object.count ? plan : nil)
    }

    private func encodeObject<V>(_ object: [String: V], cache: PlanCache, value encodeValue: (V) -> Void) {
        let cursorAtStart = cache.cursor
        let (index, cached) = nextPlan(for: object, cache: cache)
        if let cached, emit(object, plan: cached, value: encodeValue) { return }
        // A new key set for this position: sort it once and remember it.
        let plan = KeyPlan(keys: object.keys)
        cache.plans[index] = plan
        cache.cursor = cursorAtStart + 1
        let emitted = emit(object, plan: plan, value: encodeValue)
        precondition(emitted, "a plan built from an object's own keys always fits it")
    }

    /// Emits `object` in `plan`'s order; false (and nothing emitted) when the keys differ.
    private func emit<V>(_ object: [String: V], plan: KeyPlan, value encodeValue: (V) -> Void) -> Bool {
        let start = out.count
        out.append(UInt8(ascii: "{"))
        for position in plan.sortedKeys.indices {
            guard let value = object[plan.sortedKeys[position]] else {
                out.truncate(to: start)
                return false
            }
            if position > 0 { out.append(UInt8(ascii: ",")) }
            out.append(plan.encodedKeys[position])
            encodeValue(value)
        }
        out.append(UInt8(ascii: "}"))
        return true
    }

    private func encodeArray<C: Collection>(_ array: C, value encodeValue: (C.Element) -> Void) {
        out.append(UInt8(ascii: "["))
        var first = true
        for element in array {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            encodeValue(element)
        }
        out.append(UInt8(ascii: "]"))
    }

    private func encodeValue(_ value: Any, cache: PlanCache) {
        if let number = value as? Double { return out.appendJSONNumber(number) }
        if let number = value as? Float { return out.appendJSONNumber(number) }
        if let number = value as? Int { return out.appendJSONNumber(number) }
        if let numbers = value as? [Double] { return encodeArray(numbers) { out.appendJSONNumber($0) } }
        if let object = value as? [String: Any] {
            return encodeObject(object, cache: cache) { encodeValue($0, cache: cache) }
        }
        if let array = value as? [Any] { return encodeArray(array) { encodeValue($0, cache: cache) } }
        if let number = value as? Int64 { return out.appendJSONNumber(number) }
        if let number = value as? Int32 { return out.appendJSONNumber(Int64(number)) }
        if let number = value as? Int16 { return out.appendJSONNumber(Int64(number)) }
        if let number = value as? Int8 { return out.appendJSONNumber(Int64(number)) }
        if let number = value as? UInt64 { return out.appendJSONNumber(number) }
        if let number = value as? UInt { return out.appendJSONNumber(UInt64(number)) }
        if let number = value as? UInt32 { return out.appendJSONNumber(UInt64(number)) }
        if let number = value as? UInt16 { return out.appendJSONNumber(UInt64(number)) }
        if let number = value as? UInt8 { return out.appendJSONNumber(UInt64(number)) }
        preconditionFailure("channel value of type \(type(of: value)) passed validation")
    }
}
