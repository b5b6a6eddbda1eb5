import Foundation
import Testing

@testable import FieldcapFleet

/// A rig's status as the fleet reads it: a stream whose device is away says so, and a status
/// from a rig that does not say reads as before.
@Suite("Fleet status messages")
struct FleetStatusTests {
    @Test("a stream away is sent as away; a status without the key reads with no away")
    func away() throws {
        let status = FleetStatus(
            host: "rig", state: "recording",
            streams: [.init(id: "cam", rate: 0, written: 10, dropped: 0, away: true)])
        let text = String(decoding: try JSONEncoder().encode(status), as: UTF8.self)
        #expect(text.contains("\"away\":true"))
        #expect(try JSONDecoder().decode(FleetStatus.self, from: Data(text.utf8)) == status)
        let older = #"{"host":"rig","state":"recording","streams":[{"id":"cam","rate":30,"written":9,"dropped":0}]}"#
        let read = try JSONDecoder().decode(FleetStatus.self, from: Data(older.utf8))
        #expect(read.streams.first?.away == nil)
    }
}
