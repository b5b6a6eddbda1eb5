import Glibc

/// `format` filled in by C's `vsnprintf`: what `String(format:)` gave, which lives in full
/// Foundation, and with it ICU's data in the rig binary (#25).
///
/// C conversions only (`%ld`, `%02x`, `%.1f`, `%g`...), no `%@`: put Swift strings around the
/// call (`id + cFormat(" %.1f/s", rate)`), never into `format`, where a `%` in them would be
/// read as a conversion. Each integer goes at the width its conversion reads: `Int` for `%ld`,
/// `Int32` for `%d`, `UInt32` for `%x`. Numbers are spelled as `String(format:)` spelled them
/// (in the C locale, which a Swift program keeps: a `.` before the decimals).
package func cFormat(_ format: String, _ arguments: any CVarArg...) -> String {
    // A va_list is spent once read: the measuring call and the writing call each get their own.
    let length = Int(withVaList(arguments) { vsnprintf(nil, 0, format, $0) })
    precondition(length >= 0, "not a C format: \(format)")
    return String(unsafeUninitializedCapacity: length + 1) { buffer in
        buffer.withMemoryRebound(to: CChar.self) { text in
            _ = withVaList(arguments) { vsnprintf(text.baseAddress, length + 1, format, $0) }
        }
        return length
    }
}
