/// Foundation's `String.compare(_:options:range:locale:)` with the options and locale
/// `JSONSerialization` sorts keys with (`[.numeric, .caseInsensitive, .forcedOrdering]`, the
/// system locale): CoreFoundation's `CFStringCompareWithOptionsAndLocale`, step for step, over
/// the system's ICU root collator.
///
/// CoreFoundation walks both strings in UTF-16, compares digit runs by value, folds case and
/// decomposes character clusters; at the first difference folding does not explain it hands
/// the rest of both strings, widened to the surrounding letters and punctuation, to ICU. Where
/// the strings are equal but for case or digits' leading zeros, `.forcedOrdering` decides by
/// ICU's tertiary level and then by code point. The steps are kept as CoreFoundation has them
/// (names included), because the answer depends on where each one looks, not only on ICU's.
/// `JSONKeyOrder` answers printable-ASCII keys without it.
struct FoundationCollation {
    let icu: SystemICU

    /// CoreFoundation's cluster buffer (`kCFStringStackBufferLength`).
    private static let clusterCapacity = 64

    /// < 0 when `a` goes before `b`, > 0 after; 0 only for equal strings.
    func compare(_ a: String, _ b: String) -> Int {
        let first = Array(a.utf16), second = Array(b.utf16)
        return icu.withCollator { collator in
            Comparison(icu: icu, collator: collator, first: first, second: second).run()
        }
    }

    private struct Comparison {
        let icu: SystemICU
        let collator: SystemICU.Collator
        let first: [UInt16]
        let second: [UInt16]

        /// The UTF-16 unit at `index`, 0 past either end (as `CFStringGetCharacterFromInlineBuffer`).
        private func unit(_ text: [UInt16], _ index: Int) -> UInt32 {
            index >= 0 && index < text.count ? UInt32(text[index]) : 0
        }

        private static func isDigit(_ unit: UInt32) -> Bool { unit >= 0x30 && unit <= 0x39 }

        private static func isUppercaseASCII(_ unit: UInt32) -> Bool { unit >= 0x41 && unit <= 0x5A }

        /// `CFStringCompareWithOptionsAndLocale`'s loop.
        func run() -> Int {
            var index1 = 0, index2 = 0
            var cluster1: [UInt32] = [], cluster2: [UInt32] = []
            var clusterIndex1 = 0, clusterIndex2 = 0
            var used1 = 1, used2 = 1
            var localizedIndex1 = 0, localizedIndex2 = 0
            var forcedIndex1 = 0, forcedIndex2 = 0
            var result = 0
            var numericEquivalence = false
            var preventFolding1 = 0, preventFolding2 = 0

            while index1 < first.count, index2 < second.count {
                // Case is folded only once a difference has been seen: `.forcedOrdering` keeps it.
                var char1 = next(first, index1, cluster1, &clusterIndex1, &used1, lowering: result != 0)
                var char2 = next(second, index2, cluster2, &clusterIndex2, &used2, lowering: result != 0)

                if cluster1.isEmpty, Self.isDigit(char1), cluster2.isEmpty, Self.isDigit(char2) {
                    // Digit runs weigh as numbers (CoreFoundation's UInt64 wraps past 20 digits).
                    var value1: UInt64 = 0, value2: UInt64 = 0
                    let start1 = index1, start2 = index2
                    repeat {
                        value1 = value1 &* 10 &+ UInt64(char1 - 0x30)
                        index1 += 1
                        char1 = unit(first, index1)
                    } while Self.isDigit(char1)
                    repeat {
                        value2 = value2 &* 10 &+ UInt64(char2 - 0x30)
                        index2 += 1
                        char2 = unit(second, index2)
                    } while Self.isDigit(char2)
                    if value1 == value2 {
                        if result == 0, index1 - start1 != index2 - start2 {
                            result = index1 - start1 < index2 - start2 ? -1 : 1
                            numericEquivalence = true
                            forcedIndex1 = start1
                            forcedIndex2 = start2
                        }
                        continue
                    }
                    return value1 < value2 ? -1 : 1
                }

                if char1 != char2 {
                    if result == 0 {
                        result = char1 < char2 ? -1 : 1
                        forcedIndex1 = localizedIndex1
                        forcedIndex2 = localizedIndex2
                    }
                    if char1 < 0x80, char2 < 0x80 {
                        return localized(index1, index2)
                    }
                    if UTF16Units.isHighSurrogate(char1), UTF16Units.isLowSurrogate(unit(first, index1 + 1)) {
                        char1 = UTF16Units.scalar(high: char1, low: unit(first, index1 + 1))
                        used1 = 2
                    }
                    if UTF16Units.isHighSurrogate(char2), UTF16Units.isLowSurrogate(unit(second, index2 + 1)) {
                        char2 = UTF16Units.scalar(high: char2, low: unit(second, index2 + 1))
                        used2 = 2
                    }

                    if char1 != char2 {
                        if cluster1.isEmpty, preventFolding1 == 0 || preventFolding1 == index1 {
                            preventFolding1 = 0
                            var overflow = false
                            cluster1 = foldCluster(char1, first, index1, used: &used1, overflow: &overflow)
                            if !cluster1.isEmpty {
                                char1 = cluster1[0]
                                clusterIndex1 = 1
                            }
                            if overflow { preventFolding1 = clusterEnd(first, index1) }
                        }
                        if cluster1.isEmpty, !cluster2.isEmpty {
                            return localized(localizedIndex1, localizedIndex2)
                        }
                        if cluster2.isEmpty, cluster1.isEmpty || char1 != char2,
                            preventFolding2 == 0 || preventFolding2 == index2
                        {
                            preventFolding2 = 0
                            var overflow = false
                            cluster2 = foldCluster(char2, second, index2, used: &used2, overflow: &overflow)
                            if !cluster2.isEmpty {
                                char2 = cluster2[0]
                                clusterIndex2 = 1
                            }
                            if cluster2.isEmpty || char1 != char2 {
                                return localized(localizedIndex1, localizedIndex2)
                            }
                            if overflow { preventFolding2 = clusterEnd(second, index2) }
                        }
                    }

                    if !cluster1.isEmpty, !cluster2.isEmpty {
                        while clusterIndex1 < cluster1.count, clusterIndex2 < cluster2.count,
                            cluster1[clusterIndex1] == cluster2[clusterIndex2]
                        {
                            clusterIndex1 += 1
                            clusterIndex2 += 1
                        }
                        if clusterIndex1 < cluster1.count, clusterIndex2 < cluster2.count {
                            return localized(localizedIndex1, localizedIndex2)
                        }
                    }
                }

                if !cluster1.isEmpty, clusterIndex1 == cluster1.count { cluster1 = [] }
                if !cluster2.isEmpty, clusterIndex2 == cluster2.count { cluster2 = [] }
                if cluster1.isEmpty { index1 += used1 }
                if cluster2.isEmpty { index2 += used2 }
                if cluster1.isEmpty, cluster2.isEmpty {
                    localizedIndex1 = index1
                    localizedIndex2 = index2
                }
            }

            // Equal but for what `.forcedOrdering` decides: ICU decides it, unless it was a digit
            // run's leading zeros, which ICU cannot see.
            if !numericEquivalence, result != 0, index1 == first.count, index2 == second.count {
                result = localized(forcedIndex1, forcedIndex2)
            }
            if index1 < first.count { return 1 }
            if index2 < second.count { return -1 }
            return result
        }

        /// The next character of one side: its folded cluster's next, or the text's at `index`
        /// (an ASCII capital lowered when `lowering`).
        private func next(
            _ text: [UInt16], _ index: Int, _ cluster: [UInt32], _ clusterIndex: inout Int, _ used: inout Int,
            lowering: Bool
        ) -> UInt32 {
            guard cluster.isEmpty else {
                clusterIndex += 1
                return cluster[clusterIndex - 1]
            }
            used = 1
            let character = unit(text, index)
            return lowering && Self.isUppercaseASCII(character) ? character + 0x20 : character
        }

        /// `__CFStringFoldCharacterClusterAtIndex`: the case-folded, decomposed cluster at `index`
        /// with its combining marks in canonical order, or empty when folding changes nothing.
        private func foldCluster(
            _ character: UInt32, _ text: [UInt16], _ index: Int, used: inout Int, overflow: inout Bool
        ) -> [UInt32] {
            guard character != 0 else { return [] }
            var character = character
            var output: [UInt32] = []
            var current = index + (character > 0xFFFF ? 2 : 1)
            let capacity = FoundationCollation.clusterCapacity

            if character < 0x80 {
                if Self.isUppercaseASCII(character) {
                    character += 0x20
                    output = [character]
                }
            } else {
                if character <= 0xFFFF, UTF16Units.isHighSurrogate(character),
                    UTF16Units.isLowSurrogate(unit(text, current))
                {
                    character = UTF16Units.scalar(high: character, low: unit(text, current))
                    current += 1
                }
                if let decomposed = decomposition(character) {
                    if decomposed.count <= capacity {
                        output = decomposed
                        character = output[0]
                    } else {
                        overflow = true
                    }
                }
                if let folded = caseMapping(character) {
                    // The folded base replaces the first scalar; the marks decomposition left stay.
                    output = folded + output.dropFirst()
                    character = folded.last!
                }
            }

            // The combining marks that follow, decomposed.
            var fill = true
            if output.isEmpty {
                let (next, width) = scalar(text, current)
                if UnicodeSets.isGraphemeExtend(next) {
                    output = [character]
                    if let decomposed = decomposition(next) {
                        if output.count + decomposed.count <= capacity {
                            output += decomposed
                        } else {
                            overflow = true
                        }
                    } else {
                        output.append(next)
                    }
                    current += width
                } else {
                    fill = false
                }
            }
            var endedCluster = false
            while output.count < capacity {
                let (next, width) = scalar(text, current)
                guard UnicodeSets.isGraphemeExtend(next) else {
                    endedCluster = true
                    break
                }
                if fill {
                    if let decomposed = decomposition(next) {
                        guard output.count + decomposed.count <= capacity else { break }
                        output += decomposed
                    } else {
                        output.append(next)
                    }
                } else if output.isEmpty {
                    output = [character]
                }
                current += width
            }
            if !endedCluster { overflow = true }

            if output.count > 1 {
                var start = output.count - 1
                while start > 0, UnicodeSets.isGraphemeExtend(output[start]) { start -= 1 }
                if output.count - start > 1 { Self.prioritySort(&output[start...]) }
            }
            if !output.isEmpty { used = current - index }
            return output
        }

        /// The scalar at `index` and how many units it takes.
        private func scalar(_ text: [UInt16], _ index: Int) -> (UInt32, Int) {
            let first = unit(text, index)
            if UTF16Units.isHighSurrogate(first), UTF16Units.isLowSurrogate(unit(text, index + 1)) {
                return (UTF16Units.scalar(high: first, low: unit(text, index + 1)), 2)
            }
            return (first, 1)
        }

        /// The canonical decomposition of `character`, nil when it has none.
        private func decomposition(_ character: UInt32) -> [UInt32]? {
            guard character >= 0xC0 else { return nil }
            let decomposed = UTF16Units.scalars(icu.decompose(character))
            return decomposed == [character] ? nil : decomposed
        }

        /// `CFUniCharMapCaseTo(..., kCFUniCharCaseFold)`: full case folding, or the lowercase
        /// mapping where folding keeps the character but lowercasing does not; nil when both keep it.
        private func caseMapping(_ character: UInt32) -> [UInt32]? {
            let folded = UTF16Units.scalars(icu.foldCase(character))
            // CoreFoundation's folding table leaves out the foldings to capitals (Cherokee's).
            let foldsToCapital = folded.contains { Unicode.Scalar($0)?.properties.isUppercase ?? false }
            if folded != [character], !foldsToCapital { return folded }
            guard let scalar = Unicode.Scalar(character) else { return nil }
            let lowered = scalar.properties.lowercaseMapping.unicodeScalars.map(\.value)
            return lowered == [character] ? nil : lowered
        }

        /// `__CFUniCharPrioritySort`: a bubble sort by combining class from the first mark on.
        private static func prioritySort(_ characters: inout ArraySlice<UInt32>) {
            var start = characters.startIndex
            while start < characters.endIndex, UnicodeSets.combiningClass(characters[start]) == 0 { start += 1 }
            guard characters.endIndex - start > 1 else { return }
            var changed = true
            while changed {
                changed = false
                for index in start..<(characters.endIndex - 1)
                where UnicodeSets.combiningClass(characters[index]) > UnicodeSets.combiningClass(characters[index + 1])
                {
                    characters.swapAt(index, index + 1)
                    changed = true
                }
            }
        }

        /// Where the grapheme cluster at `index` ends, for a cluster too long to fold.
        private func clusterEnd(_ text: [UInt16], _ index: Int) -> Int {
            var end = index + scalar(text, index).1
            while end < text.count, UnicodeSets.isGraphemeExtend(scalar(text, end).0) { end += scalar(text, end).1 }
            return end
        }

        /// `_CFCompareStringsWithLocale` from `index1` and `index2` to the ends.
        private func localized(_ index1: Int, _ index2: Int) -> Int {
            var start1 = index1 > 0 ? extendBackward(first, index1 - 1) : index1
            var start2 = index2 > 0 ? extendBackward(second, index2 - 1) : index2
            // Stepping back over a surrogate pair that opens the string lands CoreFoundation on
            // -1, where it cannot read in one go: it widens from the start instead.
            let fromBeforeStart = start1 < 0 || start2 < 0
            start1 = max(start1, 0)
            start2 = max(start2, 0)

            // CoreFoundation reads both rests in one go when they fit its 64-unit buffer.
            if !fromBeforeStart, first.count - index1 <= FoundationCollation.clusterCapacity,
                second.count - index2 <= FoundationCollation.clusterCapacity
            {
                let (_, order) = compareText(first[start1...], second[start2...])
                return order < 0 ? -1 : 1
            }

            // Otherwise it widens the ranges until a primary difference or the ends.
            var result = 0
            var order = 0
            var end1 = index1, end2 = index2
            var text1 = first[start1..<start1], text2 = second[start2..<start2]
            repeat {
                if end1 < first.count {
                    end1 = extendForward(first, end1)
                    text1 = first[start1..<end1]
                }
                if end2 < second.count {
                    end2 = extendForward(second, end2)
                    text2 = second[start2..<end2]
                }
                let (equivalent, textOrder) = compareText(text1, text2)
                order = textOrder
                if equivalent {
                    if result == 0, order != 0 { result = order < 0 ? -1 : 1 }
                    order = 0
                }
                if order < -1 || order > 1 { break }
                if order == 0 {
                    start1 = end1
                    start2 = end2
                }
            } while end1 < first.count || end2 < second.count
            if order != 0 { result = order < 0 ? -1 : 1 }
            return result
        }

        /// `__extendLocationBackward`: back over combining marks and punctuation.
        private func extendBackward(_ text: [UInt16], _ location: Int) -> Int {
            var location = location
            while location > 0 {
                let character = unit(text, location)
                let previous = unit(text, location - 1)
                if UTF16Units.isLowSurrogate(character), UTF16Units.isHighSurrogate(previous) {
                    let scalar = UTF16Units.scalar(high: previous, low: character)
                    if scalar >> 16 > 1 || (!UnicodeSets.isNonBase(scalar) && !UnicodeSets.isPunctuation(scalar)) {
                        break
                    }
                    location -= 2
                } else {
                    if (!UnicodeSets.isNonBase(character) && !UnicodeSets.isPunctuation(character))
                        || (character >= 0x2E80 && character < 0xAC00)
                    {
                        break
                    }
                    location -= 1
                }
            }
            return location
        }

        /// `__extendLocationForward`: on over letters, digits, marks, punctuation and controls.
        private func extendForward(_ text: [UInt16], _ location: Int) -> Int {
            var location = location
            repeat {
                let character = unit(text, location)
                let next = unit(text, location + 1)
                if UTF16Units.isHighSurrogate(character), UTF16Units.isLowSurrogate(next) {
                    let scalar = UTF16Units.scalar(high: character, low: next)
                    location += 2
                    if !UnicodeSets.isContextual(scalar) { break }
                } else {
                    location += 1
                    if !UnicodeSets.isContextual(character) || (character >= 0x2E80 && character < 0xAC00) { break }
                }
            } while location < text.count
            return location
        }

        /// `__CompareTextDefault`: ICU's primary level with numbers, then the secondary; the
        /// order is ±2 for a primary difference, ±1 for a lesser one. `equivalent` when neither
        /// differs, and then the order is the tertiary level's, or the code points'.
        private func compareText(_ a: ArraySlice<UInt16>, _ b: ArraySlice<UInt16>) -> (equivalent: Bool, order: Int) {
            collator.set(.numericCollation, .on)
            defer { collator.set(.numericCollation, .off) }
            var order = 0
            let primary = collator.collate(a, b)
            if primary != 0 { order = primary < 0 ? -2 : 2 }
            if order == 0 {
                collator.set(.normalizationMode, .on)
                collator.set(.strength, .secondary)
                collator.set(.caseLevel, .off)
                let secondary = collator.collate(a, b)
                if secondary != 0 { order = secondary < 0 ? -1 : 1 }
                restorePrimary()
            }
            let equivalent = order == 0
            if order == 0 {
                collator.set(.normalizationMode, .on)
                collator.set(.strength, .tertiary)
                collator.set(.caseLevel, .on)
                let tertiary = collator.collate(a, b)
                if tertiary != 0 {
                    order = tertiary < 0 ? -1 : 1
                } else if let difference = zip(a, b).first(where: { $0 != $1 }) {
                    order = difference.0 < difference.1 ? -1 : 1
                } else if a.count != b.count {
                    order = a.count < b.count ? -1 : 1
                }
                restorePrimary()
            }
            return (equivalent, order)
        }

        private func restorePrimary() {
            collator.set(.normalizationMode, .off)
            collator.set(.strength, .primary)
            collator.set(.caseLevel, .off)
        }
    }
}

/// The character classes CoreFoundation's comparison consults, from the standard library's
/// Unicode properties. A lone surrogate belongs to none of them.
enum UnicodeSets {
    private static func properties(_ value: UInt32) -> Unicode.Scalar.Properties? {
        Unicode.Scalar(value)?.properties
    }

    /// Marks (`M*`): `kCFUniCharNonBaseCharacterSet`.
    static func isNonBase(_ value: UInt32) -> Bool {
        switch properties(value)?.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: true
        default: false
        }
    }

    /// `P*`: `kCFUniCharPunctuationCharacterSet`.
    static func isPunctuation(_ value: UInt32) -> Bool {
        switch properties(value)?.generalCategory {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
            .initialPunctuation, .finalPunctuation, .otherPunctuation:
            true
        default: false
        }
    }

    /// Letters, marks, numbers, punctuation, controls and formats: what
    /// `__extendLocationForward` treats as context.
    static func isContextual(_ value: UInt32) -> Bool {
        switch properties(value)?.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .nonspacingMark, .spacingMark, .enclosingMark,
            .decimalNumber, .letterNumber, .otherNumber,
            .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
            .initialPunctuation, .finalPunctuation, .otherPunctuation,
            .control, .format:
            true
        default: false
        }
    }

    static func isGraphemeExtend(_ value: UInt32) -> Bool { properties(value)?.isGraphemeExtend ?? false }

    static func combiningClass(_ value: UInt32) -> UInt8 { properties(value)?.canonicalCombiningClass.rawValue ?? 0 }
}
