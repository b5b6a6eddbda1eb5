/// A feed's pinned channels (`channels=force+torque.z`): the names every record must carry, so a
/// program that changed what it sends is noticed at its first changed line.
///
/// A pinned name is a flattened channel (`torque.z`, `joints.wrist.0`) or the prefix of some
/// (`force` covers `force.x`, `force.y`, `force.z`). A record fits when each pinned name covers
/// at least one of its leaves, and each of its leaves is covered.
public enum FeedSchema {
    /// Nil when `leaves` (a record's flattened names) fit `pinned`; else what differs.
    public static func problem(_ leaves: [String], pinned: Set<String>) -> String? {
        func covered(_ leaf: String, by name: String) -> Bool {
            leaf == name || (leaf.hasPrefix(name) && leaf.utf8.dropFirst(name.utf8.count).first == UInt8(ascii: "."))
        }
        let missing = pinned.filter { name in !leaves.contains { covered($0, by: name) } }.sorted()
        let extra = leaves.filter { leaf in !pinned.contains { covered(leaf, by: $0) } }
        guard !missing.isEmpty || !extra.isEmpty else { return nil }
        var parts: [String] = []
        if !missing.isEmpty { parts.append("no \(shown(missing))") }
        if !extra.isEmpty { parts.append("\(shown(extra)) not pinned") }
        return parts.joined(separator: "; ") + " (channels=\(pinned.sorted().joined(separator: "+")))"
    }

    private static func shown(_ names: [String]) -> String {
        let first = names.prefix(4).map { $0.printable }.joined(separator: ", ")
        return names.count > 4 ? "\(first) and \(names.count - 4) more" : first
    }
}
