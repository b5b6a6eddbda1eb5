import FieldcapV4L2
import TestSupport
import Testing

/// The payload headers of a UVC camera's metadata node, and its own clock mapped onto the host's.
/// A simulated camera and host share one true time: the camera's clock runs at 48 MHz with a
/// drift and an offset, both read the USB frame counter of that time, and the host receives each
/// header after a random latency; every mapped PTS must lie within its uncertainty of the truth.
@Suite("UVC payload headers and the camera's clock")
struct UVCClockTests {
    /// Bytes as `uvcvideo` writes a `V4L2_META_FMT_UVC` block: ns, sof, bLength, flags, PTS, SCR.
    static func block(
        hostNs: UInt64, hostFrame: UInt16, flags: UInt8, pts: UInt32? = nil, stc: UInt32? = nil,
        deviceFrame: UInt16 = 0
    ) -> [UInt8] {
        func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
            (0..<MemoryLayout<T>.size).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        }
        var out = bytes(hostNs) + bytes(hostFrame) + [12, flags]
        if let pts { out += bytes(pts) }
        if let stc { out += bytes(stc) + bytes(deviceFrame) }
        return out
    }

    @Test("a buffer's headers are read by their flags: a PTS and an SCR, an SCR alone, the standard bytes alone")
    func parse() {
        let bytes =
            Self.block(
                hostNs: 36_628_604_000, hostFrame: 628, flags: 0x8C, pts: 1_757_954_352, stc: 1_758_142_944,
                deviceFrame: 627)
            + Self.block(
                hostNs: 36_629_000_000, hostFrame: 629, flags: 0x88, stc: 1_758_160_000, deviceFrame: 0xF800 | 628)
            + Self.block(hostNs: 36_630_000_000, hostFrame: 630, flags: 0x82)
        let contents = bytes.withUnsafeBytes { UVCMetadata.parse($0) }
        #expect(contents.strayBytes == 0)
        #expect(contents.headers.count == 3)
        #expect(
            contents.headers[0]
                == UVCPayloadHeader(
                    hostNs: 36_628_604_000, hostFrame: 628, flags: 0x8C, pts: 1_757_954_352, stc: 1_758_142_944,
                    deviceFrame: 627))
        // The SCR's frame counter is 11 bits: the reserved bits above are not part of it.
        #expect(contents.headers[1].deviceFrame == 628)
        #expect(contents.headers[1].pts == nil)
        #expect(contents.headers[2].stc == nil)
    }

    @Test("a header cut short, or any bytes at all, are never read past; what is left over is counted")
    func hostileBytes() {
        let whole = Self.block(hostNs: 1, hostFrame: 2, flags: 0x8C, pts: 3, stc: 4, deviceFrame: 5)
        for cut in 0..<whole.count {
            let contents = Array(whole[..<cut]).withUnsafeBytes { UVCMetadata.parse($0) }
            #expect(contents.headers.isEmpty)
            #expect(contents.strayBytes == cut)
        }
        // Any bytes: every header read is the bytes at its place, in order, and what is left
        // over is less than a header.
        var generator = SplitMix64(seed: 47)
        for _ in 0..<2000 {
            let bytes = (0..<Int(generator.next() % 200)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let contents = bytes.withUnsafeBytes { UVCMetadata.parse($0) }
            var offset = 0
            for header in contents.headers {
                let block = Self.block(
                    hostNs: header.hostNs, hostFrame: header.hostFrame, flags: header.flags, pts: header.pts,
                    stc: header.stc, deviceFrame: header.deviceFrame ?? 0)
                // The same bytes in the same place, but for the camera's bLength (not kept) and
                // the SCR's reserved bits above its 11-bit frame counter.
                for index in block.indices where index != 10 {
                    let reserved = header.stc != nil && index == block.count - 1
                    let original = bytes[offset + index] & (reserved ? 0x07 : 0xFF)
                    #expect(block[index] == original, "byte \(index) of the block at \(offset)")
                }
                offset += block.count
            }
            #expect(offset + contents.strayBytes == bytes.count)
            #expect(contents.strayBytes < 12 + 10)
        }
    }

    /// A camera and host on one true time (ns): the camera's clock `48 MHz × (1 + driftPPM)` from
    /// `stcStart`, the bus frame counter `floor(t / 1 ms)`, the host's clock the true time, and a
    /// reception `latency` after the camera read its clock.
    struct Simulation {
        var driftPPM = 300.0
        var stcStart: UInt32 = 0
        var latency: (inout SplitMix64) -> Int64 = { 100_000 + Int64($0.next() % 2_900_000) }
        var hostFrameNoise = false
        /// Counters that do not keep time: the gadget's the millisecond within the second, the
        /// host's a count of a timer that runs 10 % slow.
        var emulatedCounters = false
        /// EHCI's host frame counter: 10 bits.
        var hostFrameModulus: Int64 = 2048
        /// dummy_hcd's frame numbers on both sides: the millisecond within the second.
        var millisecondOfSecond = false
        /// One header in this many has its host frame counter read `splitNs` after its host
        /// time (uvcvideo reads the time first; a starved virtual CPU stalled between the two).
        var splitEvery: Int?
        var splitNs: Int64 = 2_000_000

        func stc(at t: Int64) -> UInt32 {
            let ticks = Double(t) * 0.048 * (1 + driftPPM / 1e6)
            return stcStart &+ UInt32(truncatingIfNeeded: Int64(ticks.rounded(.down)))
        }

        /// Headers of one frame every `periodNs` for `seconds`: ten payloads 2 ms apart each, the
        /// first with the PTS of an exposure that started 5 ms before it; with each frame's true
        /// exposure start.
        func frames(
            seconds: Double, periodNs: Int64 = 33_333_333, startNs: Int64 = 10_000_000_000
        )
            -> [(headers: [UVCPayloadHeader], exposureNs: Int64)]
        {
            var generator = SplitMix64(seed: 7)
            var out: [(headers: [UVCPayloadHeader], exposureNs: Int64)] = []
            var frameStart = startNs
            var headerCount = 0
            while frameStart < startNs + Int64(seconds * 1e9) {
                let exposure = frameStart - 5_000_000
                var headers: [UVCPayloadHeader] = []
                for payload in 0..<10 {
                    let sent = frameStart + Int64(payload) * 2_000_000 + Int64(generator.next() % 500_000)
                    let received = sent + latency(&generator)
                    headerCount += 1
                    let split = splitEvery.map { headerCount % $0 == 0 } == true ? splitNs : 0
                    var hostFrame = UInt16(truncatingIfNeeded: (received + split) / 1_000_000 % hostFrameModulus)
                    var deviceFrame = UInt16(truncatingIfNeeded: sent / 1_000_000)
                    if hostFrameNoise { hostFrame = UInt16(truncatingIfNeeded: generator.next()) }
                    if millisecondOfSecond {
                        hostFrame = UInt16((received + split) % 1_000_000_000 / 1_000_000)
                        deviceFrame = UInt16(sent % 1_000_000_000 / 1_000_000)
                    }
                    if emulatedCounters {
                        hostFrame = UInt16(truncatingIfNeeded: received / 1_100_000)
                        deviceFrame = UInt16(truncatingIfNeeded: sent % 1_000_000_000 / 1_000_000)
                    }
                    headers.append(
                        UVCPayloadHeader(
                            hostNs: UInt64(received), hostFrame: hostFrame & UVCPayloadHeader.frameMask,
                            flags: payload == 0 ? 0x8C : 0x88, pts: payload == 0 ? stc(at: exposure) : nil,
                            stc: stc(at: sent), deviceFrame: deviceFrame & 0x7FF))
                }
                out.append((headers, exposure))
                frameStart += periodNs
            }
            return out
        }
    }

    /// Runs frames through a model as the capture thread does (headers in, then the frame's PTS
    /// mapped), returning each mapped frame's error against the truth and its uncertainty.
    static func run(
        _ frames: [(headers: [UVCPayloadHeader], exposureNs: Int64)], model: inout UVCClockModel
    )
        -> [(errorNs: Int64, uncertaintyNs: UInt64, consistent: Bool)]
    {
        var results: [(errorNs: Int64, uncertaintyNs: UInt64, consistent: Bool)] = []
        for frame in frames {
            for header in frame.headers { model.add(header) }
            guard let first = frame.headers.first, let pts = first.pts, let stc = first.stc,
                let mapped = model.map(pts: pts, besideSTC: stc)
            else { continue }
            results.append((mapped.hostNs - frame.exposureNs, mapped.uncertaintyNs, mapped.consistent))
        }
        return results
    }

    @Test("a drifting camera clock that wraps maps every exposure start within its bound, well under a millisecond")
    func driftAndWrap() throws {
        // The STC wraps 3 s in (48 MHz: 2^32 ticks are 89 s).
        let simulation = Simulation(driftPPM: 300, stcStart: UInt32.max - 144_000_000)
        var model = UVCClockModel()
        let results = Self.run(simulation.frames(seconds: 12), model: &model)
        #expect(results.count > 250, "frames are mapped once the fit has two seconds of span")
        let outside = results.filter { UInt64(abs($0.errorNs)) > $0.uncertaintyNs }
        #expect(outside.isEmpty, "\(outside.prefix(5))")
        let settled = results.dropFirst(60)
        #expect(settled.allSatisfy { $0.consistent })
        let worst = try #require(settled.map(\.uncertaintyNs).max())
        #expect(worst < 600_000, "uncertainty \(worst) ns")
        #expect(model.health.frameCountersKeepTime == true)
        let rate = try #require(model.health.ticksPerSecond)
        #expect(abs(rate / 48e6 - 1 - 300e-6) < 20e-6, "rate \(rate)")
        #expect(model.health.restarts == 0)
    }

    @Test("a camera whose clock jumps (reset, unplugged) starts the model again and is mapped again")
    func jump() {
        var first = Simulation(driftPPM: 0, stcStart: 1_000)
        var model = UVCClockModel()
        var results = Self.run(first.frames(seconds: 5), model: &model)
        first.stcStart = 2_000_000_000
        results += Self.run(first.frames(seconds: 5, startNs: 15_000_000_000), model: &model)
        #expect(model.health.restarts == 1)
        #expect(results.allSatisfy { UInt64(abs($0.errorNs)) <= $0.uncertaintyNs })
        #expect(results.count > 120)
    }

    @Test("frame counters that contradict the fit leave causality: the bound widens and still holds")
    func inconsistentFrames() {
        let simulation = Simulation(
            driftPPM: 50, latency: { 100_000 + Int64($0.next() % 400_000) }, hostFrameNoise: true)
        var model = UVCClockModel()
        let results = Self.run(simulation.frames(seconds: 4), model: &model)
        #expect(!results.isEmpty)
        #expect(results.contains { !$0.consistent })
        #expect(results.allSatisfy { UInt64(abs($0.errorNs)) <= $0.uncertaintyNs })
        #expect(model.health.inconsistent > 0)
    }

    @Test("frame counters that do not keep time are not trusted: causality and the assumed transit bound it")
    func emulatedCounters() throws {
        let simulation = Simulation(driftPPM: 10, emulatedCounters: true)
        var model = UVCClockModel()
        let results = Self.run(simulation.frames(seconds: 5), model: &model)
        #expect(results.count > 60)
        #expect(model.health.frameCountersKeepTime == false)
        #expect(results.allSatisfy { !$0.consistent })
        #expect(results.allSatisfy { UInt64(abs($0.errorNs)) <= $0.uncertaintyNs })
        let worst = try #require(results.map(\.uncertaintyNs).max())
        #expect(worst < 1_000_000, "uncertainty \(worst) ns")
    }

    @Test("an EHCI host's 10-bit frame counter is told from the bus's 11 bits, and still bounds the transit")
    func ehciFrameCounter() throws {
        let simulation = Simulation(driftPPM: 100, hostFrameModulus: 1024)
        var model = UVCClockModel()
        let results = Self.run(simulation.frames(seconds: 6), model: &model)
        #expect(model.health.hostFrameModulus == 1024)
        #expect(results.allSatisfy { $0.consistent && UInt64(abs($0.errorNs)) <= $0.uncertaintyNs })
        let worst = try #require(results.map(\.uncertaintyNs).max())
        #expect(worst < 600_000, "uncertainty \(worst) ns")
    }

    @Test("dummy_hcd's frame numbers (the millisecond within the second, both sides) keep time: modulus 1000")
    func millisecondOfSecond() throws {
        let simulation = Simulation(driftPPM: 300, stcStart: UInt32.max - 200_000_000, millisecondOfSecond: true)
        var model = UVCClockModel()
        let results = Self.run(simulation.frames(seconds: 6), model: &model)
        #expect(model.health.hostFrameModulus == 1000)
        #expect(results.count > 100)
        #expect(results.allSatisfy { $0.consistent && UInt64(abs($0.errorNs)) <= $0.uncertaintyNs })
        let worst = try #require(results.map(\.uncertaintyNs).max())
        #expect(worst < 600_000, "uncertainty \(worst) ns")
    }

    @Test("headers whose host frame counter was read late (a stalled virtual CPU) do not move the mapping")
    func splitReadings() throws {
        // 300 headers a second: about three split ones in the two seconds every mapping uses.
        let simulation = Simulation(driftPPM: 300, millisecondOfSecond: true, splitEvery: 197)
        var model = UVCClockModel()
        let results = Self.run(simulation.frames(seconds: 6), model: &model)
        #expect(model.health.hostFrameModulus == 1000)
        #expect(results.count > 100)
        let outside = results.filter { !$0.consistent || UInt64(abs($0.errorNs)) > $0.uncertaintyNs }
        #expect(outside.isEmpty, "\(outside.prefix(5))")
    }

    @Test("one header out of line is left out; error-flagged headers are left out; no restart")
    func outliersLeftOut() {
        var frames = Simulation().frames(seconds: 6)
        // One header received 5 s late, another flagged as an error with a wild clock.
        frames[120].headers[3].hostNs += 5_000_000_000
        frames[130].headers[4].flags |= UVCPayloadHeader.error
        frames[130].headers[4].stc = 7
        var model = UVCClockModel()
        let results = Self.run(frames, model: &model)
        #expect(model.health.restarts == 0)
        #expect(model.health.leftOut == 2)
        #expect(results.allSatisfy { UInt64(abs($0.errorNs)) <= $0.uncertaintyNs })
    }

    @Test("a camera whose clock stands still, or runs at an impossible rate, maps nothing and traps nothing")
    func hostileClock() {
        var model = UVCClockModel()
        var frames = Simulation().frames(seconds: 4)
        for frame in frames.indices {
            for header in frames[frame].headers.indices where frames[frame].headers[header].stc != nil {
                frames[frame].headers[header].stc = 1_000
            }
        }
        #expect(Self.run(frames, model: &model).isEmpty)
        // Clock references that step back a few milliseconds now and then (within what is not yet
        // a jump): behind the window's first one, they must not trap the frame counters' check.
        var jittery = Simulation().frames(seconds: 5)
        for frame in jittery.indices {
            for header in jittery[frame].headers.indices where (frame * 10 + header) % 7 == 1 {
                jittery[frame].headers[header].stc = jittery[frame].headers[header].stc.map { $0 &- 240_000 }
            }
        }
        var stepping = UVCClockModel()
        _ = Self.run(jittery, model: &stepping)
        // A clock that runs backwards.
        var backwards = UVCClockModel()
        for index in 0..<4000 {
            backwards.add(
                UVCPayloadHeader(
                    hostNs: UInt64(index) * 1_000_000, hostFrame: UInt16(index % 2048), flags: 0x8C,
                    stc: UInt32(truncatingIfNeeded: 1_000_000_000 - index * 48_000), deviceFrame: UInt16(index % 2048)))
            _ = backwards.map(pts: 5, besideSTC: UInt32(truncatingIfNeeded: 1_000_000_000 - index * 48_000))
        }
        // A clock of 0.5 Hz ... 4 GHz: a PTS 2^31 ticks from its STC.
        var fast = UVCClockModel()
        var generator = SplitMix64(seed: 3)
        for index in 0..<4000 {
            fast.add(
                UVCPayloadHeader(
                    hostNs: UInt64(index) * 1_000_000, hostFrame: UInt16(index % 2048), flags: 0x8C,
                    stc: UInt32(truncatingIfNeeded: generator.next()), deviceFrame: UInt16(index % 2048)))
            _ = fast.map(pts: UInt32(truncatingIfNeeded: generator.next()), besideSTC: UInt32(index))
        }
    }

    @Test("nothing is mapped before the fit has span, nor without clock references")
    func warmUp() {
        var model = UVCClockModel()
        #expect(model.map(pts: 1, besideSTC: 1) == nil)
        let frames = Simulation().frames(seconds: 1.5)
        #expect(Self.run(frames, model: &model).isEmpty)
    }
}
