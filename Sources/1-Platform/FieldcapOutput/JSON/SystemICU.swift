import FieldcapSystem
import Glibc

/// The system's ICU (Debian's `libicu72`, which libiio's libxml2 already brings onto every rig),
/// loaded when the first key outside printable ASCII needs Foundation's order. Loading it at run
/// time keeps ICU's 30 MB of data out of the binary; nothing else in fieldcap needs it.
///
/// Thread-safe: the collator's attributes change during a comparison, so it is used under a lock.
final class SystemICU: @unchecked Sendable {
    /// ICU, or nil when no `libicuuc`/`libicui18n` pair of one version can be loaded.
    static let shared: SystemICU? = SystemICU()

    /// `UColAttribute` and `UColAttributeValue`, as `ucol.h` numbers them.
    enum Attribute: Int32 {
        case alternateHandling = 1
        case caseLevel = 3
        case normalizationMode = 4
        case strength = 5
        case numericCollation = 7
    }

    enum AttributeValue: Int32 {
        case primary = 0
        case secondary = 1
        case tertiary = 2
        case off = 16
        case on = 17
        case nonIgnorable = 21
    }

    private typealias CollatorOpen =
        @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<Int32>) -> OpaquePointer?
    private typealias SetAttribute = @convention(c) (OpaquePointer?, Int32, Int32, UnsafeMutablePointer<Int32>) -> Void
    private typealias StringCollate =
        @convention(c) (
            OpaquePointer?, UnsafePointer<UInt16>?, Int32, UnsafePointer<UInt16>?, Int32
        ) -> Int32
    private typealias FoldCase =
        @convention(c) (
            UnsafeMutablePointer<UInt16>?, Int32, UnsafePointer<UInt16>?, Int32, UInt32, UnsafeMutablePointer<Int32>
        ) -> Int32
    private typealias NormalizerInstance = @convention(c) (UnsafeMutablePointer<Int32>) -> OpaquePointer?
    private typealias Normalize =
        @convention(c) (
            OpaquePointer?, UnsafePointer<UInt16>?, Int32, UnsafeMutablePointer<UInt16>?, Int32,
            UnsafeMutablePointer<Int32>
        ) -> Int32

    private let setAttributeFunction: SetAttribute
    private let collateFunction: StringCollate
    private let foldCaseFunction: FoldCase
    private let normalizeFunction: Normalize
    private let collator: OpaquePointer
    private let decomposition: OpaquePointer
    private let lock = Lock()

    private init?() {
        // Debian suffixes every symbol with the library's major version (`ucol_open_72`).
        for version in (50...90).reversed() {
            guard let common = dlopen("libicuuc.so.\(version)", RTLD_NOW | RTLD_LOCAL) else { continue }
            guard let i18n = dlopen("libicui18n.so.\(version)", RTLD_NOW | RTLD_LOCAL) else { return nil }
            func symbol<F>(_ library: UnsafeMutableRawPointer, _ name: String, as _: F.Type) -> F? {
                guard let address = dlsym(library, "\(name)_\(version)") ?? dlsym(library, name) else { return nil }
                return unsafeBitCast(address, to: F.self)
            }
            guard let open = symbol(i18n, "ucol_open", as: CollatorOpen.self),
                let setAttribute = symbol(i18n, "ucol_setAttribute", as: SetAttribute.self),
                let collate = symbol(i18n, "ucol_strcoll", as: StringCollate.self),
                let foldCase = symbol(common, "u_strFoldCase", as: FoldCase.self),
                let nfdInstance = symbol(common, "unorm2_getNFDInstance", as: NormalizerInstance.self),
                let normalize = symbol(common, "unorm2_normalize", as: Normalize.self)
            else { return nil }
            var status: Int32 = 0
            guard let collator = open("", &status), status <= 0,
                let decomposition = nfdInstance(&status), status <= 0
            else { return nil }
            // CoreFoundation's collator: root order, no normalization, punctuation not ignored,
            // primary strength; each comparison raises and restores the levels it needs.
            for (attribute, value) in [
                (Attribute.normalizationMode, AttributeValue.off), (.alternateHandling, .nonIgnorable),
                (.strength, .primary), (.caseLevel, .off), (.numericCollation, .off),
            ] {
                setAttribute(collator, attribute.rawValue, value.rawValue, &status)
            }
            guard status <= 0 else { return nil }
            setAttributeFunction = setAttribute
            collateFunction = collate
            foldCaseFunction = foldCase
            normalizeFunction = normalize
            self.collator = collator
            self.decomposition = decomposition
            return
        }
        return nil
    }

    /// Runs `body` with the root collator, alone.
    func withCollator<R>(_ body: (Collator) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(Collator(icu: self))
    }

    /// The root collator, valid inside `withCollator`.
    struct Collator {
        fileprivate let icu: SystemICU

        func set(_ attribute: Attribute, _ value: AttributeValue) {
            var status: Int32 = 0
            icu.setAttributeFunction(icu.collator, attribute.rawValue, value.rawValue, &status)
        }

        /// ICU's `UCollationResult`: -1, 0 or 1.
        func collate(_ a: ArraySlice<UInt16>, _ b: ArraySlice<UInt16>) -> Int32 {
            a.withUnsafeBufferPointer { a in
                b.withUnsafeBufferPointer { b in
                    icu.collateFunction(icu.collator, a.baseAddress, Int32(a.count), b.baseAddress, Int32(b.count))
                }
            }
        }
    }

    /// Unicode's full case folding of `scalar` (`ß` -> `ss`), in UTF-16.
    func foldCase(_ scalar: UInt32) -> [UInt16] {
        transform(scalar) { output, capacity, input, count, status in
            foldCaseFunction(output, capacity, input, count, 0, status)
        }
    }

    /// The canonical decomposition (NFD) of `scalar`, in UTF-16.
    func decompose(_ scalar: UInt32) -> [UInt16] {
        transform(scalar) { output, capacity, input, count, status in
            normalizeFunction(decomposition, input, count, output, capacity, status)
        }
    }

    private func transform(
        _ scalar: UInt32,
        _ body: (UnsafeMutablePointer<UInt16>, Int32, UnsafePointer<UInt16>, Int32, UnsafeMutablePointer<Int32>) ->
            Int32
    ) -> [UInt16] {
        let input = UTF16Units.encode(scalar)
        var output = [UInt16](repeating: 0, count: 32)
        var status: Int32 = 0
        let count = input.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                body(output.baseAddress!, Int32(output.count), input.baseAddress!, Int32(input.count), &status)
            }
        }
        guard status <= 0, count >= 0, Int(count) <= output.count else { return input }
        return Array(output[..<Int(count)])
    }
}

/// UTF-16 code units and the scalars they spell.
enum UTF16Units {
    static func encode(_ scalar: UInt32) -> [UInt16] {
        guard scalar > 0xFFFF else { return [UInt16(scalar)] }
        let offset = scalar - 0x10000
        return [UInt16(0xD800 + (offset >> 10)), UInt16(0xDC00 + (offset & 0x3FF))]
    }

    static func isHighSurrogate(_ unit: UInt32) -> Bool { unit >= 0xD800 && unit <= 0xDBFF }

    static func isLowSurrogate(_ unit: UInt32) -> Bool { unit >= 0xDC00 && unit <= 0xDFFF }

    static func scalar(high: UInt32, low: UInt32) -> UInt32 { ((high - 0xD800) << 10) + (low - 0xDC00) + 0x10000 }

    /// The scalars `units` spell, a lone surrogate as itself.
    static func scalars(_ units: [UInt16]) -> [UInt32] {
        var scalars: [UInt32] = []
        var index = 0
        while index < units.count {
            let unit = UInt32(units[index])
            if isHighSurrogate(unit), index + 1 < units.count, isLowSurrogate(UInt32(units[index + 1])) {
                scalars.append(scalar(high: unit, low: UInt32(units[index + 1])))
                index += 2
            } else {
                scalars.append(unit)
                index += 1
            }
        }
        return scalars
    }
}
