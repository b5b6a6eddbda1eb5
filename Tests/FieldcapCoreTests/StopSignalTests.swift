import Foundation
import Testing

@testable import FieldcapCore

@Suite("Stop signal")
struct StopSignalTests {
    @Test("wait returns at its timeout without a stop, at once after one")
    func waitTimesOutOrStops() {
        let signal = StopSignal()
        #expect(signal.wait(milliseconds: 5) == false)
        signal.request()
        #expect(signal.wait(milliseconds: 60_000) == true)
    }

    @Test("a stop requested from another thread ends a long wait")
    func stopWakesWaiter() {
        let signal = StopSignal()
        let requester = Thread {
            usleep(20_000)
            signal.request()
        }
        requester.start()
        // Without the wake-up this would sleep the whole minute and then answer false.
        #expect(signal.wait(milliseconds: 60_000) == true)
    }
}
