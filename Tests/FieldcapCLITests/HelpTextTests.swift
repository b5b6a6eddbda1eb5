import Foundation
import TestSupport
import Testing

@Suite("--help in an 80-column terminal")
struct HelpTextTests {
    /// The help of `command` (a path of subcommands) as an 80-column terminal, or a pipe, shows it.
    static func help(_ command: [String]) throws -> String {
        let result = try runTool("env", ["COLUMNS=80", FieldcapProcess.executable.path] + command + ["--help"])
        #expect(result.status == 0, "\(command): \(result.output)")
        // Nothing above the help: `record --help` without devices once printed "Error: nothing to
        // record" first (its validation runs before ArgumentParser looks for --help).
        #expect(
            result.output.hasPrefix("OVERVIEW:") || result.output.hasPrefix("USAGE:"),
            "fieldcap \(command.joined(separator: " ")) --help: \(result.output.prefix(200))")
        return result.output
    }

    /// The subcommands a help lists under SUBCOMMANDS (up to the blank line before "See ...").
    static func subcommands(in help: String) -> [String] {
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        let section = help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { !$0.isEmpty }
        return section.compactMap { line in
            guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
            return line.split(separator: " ").first.map(String.init)
        }
    }

    @Test("every command's --help reads whole at 80 columns: no line of the text wrapped into a stub")
    func noStubs() throws {
        var commands: [[String]] = [[]]
        var checked = 0
        while let command = commands.popLast(), checked < 60 {
            let text = try Self.help(command)
            checked += 1
            commands += Self.subcommands(in: text).map { command + [$0] }
            // A text line longer than the terminal is wrapped by ArgumentParser and its tail left
            // on a short line of its own before the text goes on: "as a" / "recording starts...".
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let prose = lines.prefix { !$0.hasPrefix("USAGE:") && !$0.hasPrefix("OPTIONS:") }
            for (index, line) in prose.enumerated().dropLast() {
                let next = prose[prose.startIndex + index + 1]
                let stub =
                    !line.isEmpty && line.count < 24 && !line.hasSuffix(":") && !next.isEmpty
                    && !next.hasPrefix(" ")
                #expect(!stub, "fieldcap \(command.joined(separator: " ")) --help, line \(index + 1): '\(line)'")
            }
        }
        #expect(checked > 15, "the subcommands were found")
    }
}
