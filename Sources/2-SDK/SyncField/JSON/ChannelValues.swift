/// What `record()` accepts as channel values, checked on the caller's thread.
///
/// Leaves are numbers: `Double`, `Float`, and every fixed-width integer type. Containers are
/// dictionaries with `String` keys and arrays, nested to any depth. NaN and infinities are
/// refused, because JSON has no spelling for them (`JSONSerialization` throws on them too).
enum ChannelValues {
    struct Problem: Error {
        var path: [String]
        var reason: String

        var pathDescription: String { path.isEmpty ? "channels" : path.joined(separator: ".") }
    }

    /// Nil when every leaf of `channels` is a finite number; otherwise where and why not.
    static func problem(in channels: [String: Any]) -> Problem? {
        for (key, value) in channels {
            if var problem = problem(in: value) {
                problem.path.insert(key, at: 0)
                return problem
            }
        }
        return nil
    }

    static func problem(in value: Any) -> Problem? {
        // The common leaves first: an IMU record is six Doubles.
        if let number = value as? Double { return number.isFinite ? nil : nonFinite(number) }
        if let number = value as? Float { return number.isFinite ? nil : nonFinite(Double(number)) }
        if value is Int || value is Int64 || value is Int32 || value is Int16 || value is Int8 || value is UInt
            || value is UInt64 || value is UInt32 || value is UInt16 || value is UInt8
        {
            return nil
        }
        if let numbers = value as? [Double] {
            for (index, number) in numbers.enumerated() where !number.isFinite {
                return Problem(path: [String(index)], reason: nonFinite(number).reason)
            }
            return nil
        }
        if let numbers = value as? [Float] {
            for (index, number) in numbers.enumerated() where !number.isFinite {
                return Problem(path: [String(index)], reason: nonFinite(Double(number)).reason)
            }
            return nil
        }
        if value is [Int] { return nil }
        if let object = value as? [String: Any] { return problem(in: object) }
        if let array = value as? [Any] {
            for (index, element) in array.enumerated() {
                if var problem = problem(in: element) {
                    problem.path.insert(String(index), at: 0)
                    return problem
                }
            }
            return nil
        }
        if value is Bool {
            return Problem(path: [], reason: "is a Bool; channel values must be numbers (use 0 or 1)")
        }
        return Problem(
            path: [], reason: "has type \(type(of: value)); channel values must be numbers, arrays or [String: Any]")
    }

    private static func nonFinite(_ number: Double) -> Problem {
        Problem(path: [], reason: "is \(number); JSON cannot represent NaN or infinity")
    }
}
