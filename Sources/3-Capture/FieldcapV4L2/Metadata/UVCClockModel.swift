/// The camera's own clock mapped onto the host's, from the clock references in a UVC camera's
/// payload headers, so that a frame's PTS (its start of exposure, in the camera's clock) becomes
/// a host time with a bound.
///
/// Each header the camera sent with an SCR pairs the camera's clock (STC) with the USB frame
/// counter, and `uvcvideo` pairs its own clock with the host's frame counter as it decoded the
/// header. The host time of an STC reading is therefore before its reception (causality) and,
/// where both frame counters keep time, between `hostFrame − deviceFrame` frames (1 ms each)
/// plus one and minus two before it (a frame number read a moment off its clock can cross a
/// millisecond).
///
/// The rate of the camera's clock against the host's is fitted by least squares over
/// `slopeWindowNs`, through each tenth of a second's earliest reception (receptions come late in
/// stretches, when the host is busy, which would tilt a fit through all of them); it is fitted
/// again every quarter of a second of host time. Every recent header's bounds (over
/// `boundsWindowNs`) are carried to the PTS at that rate, widened by three times the rate's error
/// over the distance carried, and what all of them allow is kept: its middle is the mapping,
/// half its width the uncertainty: all but the most restrictive 1 % on each side (at least one
/// of 20 or more, up to 16), so the bound is what all but the extremes allow. A
/// header whose two readings of one side were split apart, its CPU stalled between them (a
/// starved virtual machine's for milliseconds), bounds too tightly, and one such header would
/// move the mapping by its stall. `uvcvideo` reads the host's time before its frame counter and
/// the gadget its frame counter before its clock, so a split lengthens the transit either way.
///
/// Where the bounds contradict each other, or the frame counters do not keep time with their
/// clocks, only causality bounds the time from above; from below, the earliest
/// reception of the window is *assumed* to have come within `assumedTransitNs` of its sending
/// (`consistent` false, counted in `health.inconsistent`). That is an assumption, not a bound:
/// a host that batches a camera's packets (`uvcvideo` decodes up to 32 at a time) can break it.
///
/// A host frame counter of 10 bits (EHCI's wraps at 1024) is told from the USB's 11 bits by
/// which of the two keeps time; `dummy_hcd`'s, the millisecond within the second on both sides,
/// too. The 32-bit STC and PTS wrap (at 48 MHz, every 89 s); both are
/// unwrapped against the previous header. Three headers in a row received more than `jumpNs`
/// before the fit says they were sent, or 50 times that after (the camera reset its clock, or
/// came back after an unplug), start the model again; a single one is left out. Headers the
/// camera flagged as errors are left out; a fit with an implausible rate (a camera clock outside
/// 1 kHz to 1 GHz) is not used.
///
/// Thread-bound (capture): fed and asked on the camera's thread.
public struct UVCClockModel: Sendable {
    /// A mapped instant: the host clock's time (`uvcvideo`'s clock) and a bound on its error.
    public struct Mapped: Sendable, Equatable {
        public var hostNs: Int64
        public var uncertaintyNs: UInt64
        /// False when only causality and `assumedTransitNs` bound it (see the type's comment).
        public var consistent: Bool
    }

    /// What the model has seen, for the sidecar.
    public struct Health: Sendable, Equatable {
        /// Clock references taken in, and those left out (error-flagged, or single outliers).
        public var references: Int = 0
        public var leftOut: Int = 0
        /// Times the model started again after a jump.
        public var restarts: Int = 0
        /// The camera's clock rate against the host's, ticks per second, and its error in ppm:
        /// nil before a fit.
        public var ticksPerSecond: Double?
        public var rateErrorPPM: Double?
        /// The residuals of the rough rate fit through every reference, ns (RMS): the jitter of
        /// the path from camera to host.
        public var residualRMSNs: Double?
        /// Mappings made, and those bounded only by causality and the assumed transit.
        public var mapped: Int = 0
        public var inconsistent: Int = 0
        /// The modulus the frame counters kept time in at the last fit (2048; EHCI's host 1024;
        /// dummy_hcd's 1000); nil before a fit, or when they did not.
        public var hostFrameModulus: Int?
        /// Whether the frame counters kept time at the last fit; nil before a fit.
        public var frameCountersKeepTime: Bool? { ticksPerSecond == nil ? nil : hostFrameModulus != nil }
    }

    struct Reference {
        var stc: Int64
        var hostNs: Int64
        var deviceFrame: UInt16
        var hostFrame: UInt16
    }

    /// The host's time against the camera's clock: ns per tick, its standard error, through the
    /// centre of the window; and the host frame counter's modulus when both counters keep time.
    struct Fit {
        var slope: Double
        var slopeError: Double
        var centreSTC: Double
        var centreHostNs: Double
        var hostFrameModulus: UInt16?

        func hostNs(at stc: Double) -> Double { centreHostNs + slope * (stc - centreSTC) }
    }

    public var slopeWindowNs: Int64
    public var boundsWindowNs: Int64
    public var jumpNs: Int64
    /// Where the frame counters cannot be trusted: how soon after its sending the earliest
    /// reception of a window is assumed to have come.
    public var assumedTransitNs: Int64
    public private(set) var health = Health()

    private var references: [Reference] = []
    private var first = 0
    private var lastSTC: UInt32 = 0
    private var stcBase: Int64 = 0
    private var fit: Fit?
    /// The host time of the newest reference at the last fit (or attempt); nil before one.
    private var fittedAtNs: Int64?
    /// Outliers in a row: three start the model again.
    private var outliers = 0

    /// A USB frame: the SOF counter counts milliseconds at every speed.
    static let frameNs: Int64 = 1_000_000
    /// The fit needs this much span of host time before it maps anything.
    static let minimumSpanNs: Int64 = 2_000_000_000
    static let minimumReferences = 16
    /// How often the rate is fitted again, in host time.
    static let refitEveryNs: Int64 = 250_000_000
    /// The bins of the rate fit.
    static let binNs: Int64 = 100_000_000
    /// A PTS farther than this from the STC read beside it is not believed.
    static let ptsReachNs: Double = 1_000_000_000

    public init(
        slopeWindowNs: Int64 = 20_000_000_000, boundsWindowNs: Int64 = 2_000_000_000, jumpNs: Int64 = 20_000_000,
        assumedTransitNs: Int64 = 1_000_000
    ) {
        self.slopeWindowNs = slopeWindowNs
        self.boundsWindowNs = boundsWindowNs
        self.jumpNs = jumpNs
        self.assumedTransitNs = assumedTransitNs
    }

    /// Takes in a header's clock reference; headers without an SCR are ignored.
    public mutating func add(_ header: UVCPayloadHeader) {
        guard let stc = header.stc, let deviceFrame = header.deviceFrame else { return }
        guard header.flags & UVCPayloadHeader.error == 0 else {
            health.leftOut += 1
            return
        }
        let hostNs = Int64(bitPattern: header.hostNs)
        if let fit, references.count > first {
            let unwrapped = unwrapNoUpdate(stc)
            let residual = Double(hostNs) - fit.hostNs(at: Double(unwrapped))
            // Received before it was sent, or long after (a busy host alone is allowed 50 times as
            // long): the camera's clock jumped, if the next headers agree.
            if residual < -Double(jumpNs) || residual > 50 * Double(jumpNs) {
                outliers += 1
                guard outliers >= 3 else {
                    health.leftOut += 1
                    return
                }
                restart()
                health.restarts += 1
            }
        }
        outliers = 0
        let reference = Reference(
            stc: unwrap(stc), hostNs: hostNs, deviceFrame: deviceFrame, hostFrame: header.hostFrame)
        references.append(reference)
        health.references += 1
        dropOld()
        if fittedAtNs.map({ hostNs &- $0 >= Self.refitEveryNs }) ?? true { refit() }
    }

    /// The host time of `pts`, read in the same header as `stc` (or the nearest one), so that
    /// the two wrap together; nil until the fit has the span it needs, or when the PTS lies
    /// implausibly far from the STC.
    public mutating func map(pts: UInt32, besideSTC stc: UInt32) -> Mapped? {
        guard let fit, references.count > first else { return nil }
        let ticks = Double(Int32(bitPattern: pts &- stc))
        guard abs(ticks) * fit.slope <= Self.ptsReachNs else { return nil }
        let x = Double(unwrapNoUpdate(stc)) + ticks
        // Every recent reference bounds the host time at x: its own (before its reception,
        // within its frames in transit), carried to x at the fitted rate, and widened by three
        // times the rate's error over the distance carried.
        var earliest = (high: Double.infinity, low: -Double.infinity)
        let newest = references[references.count - 1].hostNs
        let frame = Double(Self.frameNs)
        var inWindow = 0
        for reference in references[first...].reversed() {
            if newest - reference.hostNs > boundsWindowNs { break }
            inWindow += 1
        }
        let trimmed = Self.trimmed(inWindow)
        // The lowest highs and the highest lows, `trimmed` + 1 of each: on the stack, as this
        // runs for every frame on the capture thread.
        var (low, high) = withUnsafeTemporaryAllocation(of: Double.self, capacity: 2 * (trimmed + 1)) { kept in
            var highs = Extremes(storage: UnsafeMutableBufferPointer(rebasing: kept[0...trimmed]))
            var lows = Extremes(storage: UnsafeMutableBufferPointer(rebasing: kept[(trimmed + 1)...]))
            for reference in references[(references.count - inWindow)...] {
                let distance = x - Double(reference.stc)
                let carried = Double(reference.hostNs) + fit.slope * distance
                let spread = 3 * fit.slopeError * abs(distance)
                if carried + spread < earliest.high {
                    earliest = (carried + spread, carried - Double(assumedTransitNs) - spread)
                }
                guard let modulus = fit.hostFrameModulus else { continue }
                let transit =
                    modulus == 1000
                    ? Double((reference.hostFrame % 1000 &+ 1000 &- reference.deviceFrame % 1000) % 1000)
                    : Double((reference.hostFrame &- reference.deviceFrame) % modulus)
                // A frame number read a moment before its clock (the camera's) or after it (the
                // host's, after its time) can cross a millisecond: the transit seems one frame
                // longer than it was, never shorter. Hence two frames of slack below it, one above.
                lows.keep(-(carried - (transit + 1) * frame - spread))
                highs.keep(carried - max(0, transit - 2) * frame + spread)
            }
            return (-lows.bound, highs.bound)
        }
        let consistent = fit.hostFrameModulus != nil && low <= high
        if !consistent { (high, low) = earliest }
        let centre = (low + high) / 2
        let uncertainty = (high - low) / 2
        // Checked before converting: a hostile camera's numbers must not trap.
        guard centre.isFinite, uncertainty.isFinite, uncertainty >= 0, abs(centre) < 9e18, uncertainty < 1e15
        else { return nil }
        health.mapped += 1
        if !consistent { health.inconsistent += 1 }
        return Mapped(
            hostNs: Int64(centre.rounded()), uncertaintyNs: UInt64(uncertainty.rounded(.up)), consistent: consistent)
    }

    /// Forgets everything: the camera went away, or its clock jumped.
    public mutating func restart() {
        references.removeAll(keepingCapacity: true)
        first = 0
        fit = nil
        fittedAtNs = nil
        stcBase = 0
        outliers = 0
    }

    private mutating func unwrap(_ stc: UInt32) -> Int64 {
        if references.count == first {
            stcBase = 0
        } else {
            stcBase += Int64(Int32(bitPattern: stc &- lastSTC))
        }
        lastSTC = stc
        return stcBase
    }

    private func unwrapNoUpdate(_ stc: UInt32) -> Int64 { stcBase + Int64(Int32(bitPattern: stc &- lastSTC)) }

    private mutating func dropOld() {
        let newest = references[references.count - 1].hostNs
        while first < references.count - 1 && newest - references[first].hostNs > slopeWindowNs { first += 1 }
        // Compacted now and then, not at every reference: the array is the window's ring.
        if first > 4096 && first > references.count / 2 {
            references.removeFirst(first)
            first = 0
        }
    }

    /// Fits the rate through the earliest reception of each bin, once the window has the span;
    /// a fit with an implausible rate is dropped.
    private mutating func refit() {
        let window = references[first...]
        guard window.count >= Self.minimumReferences, let oldest = window.first, let newest = window.last,
            newest.hostNs - oldest.hostNs >= Self.minimumSpanNs
        else { return }
        fittedAtNs = newest.hostNs
        guard let rough = Self.leastSquares(window, origin: oldest), Self.isPlausible(rough.slope) else {
            fit = nil
            return
        }
        var earliest: [Int64: Reference] = [:]
        func lateness(_ reference: Reference) -> Double {
            Double(reference.hostNs - oldest.hostNs) - rough.slope * Double(reference.stc - oldest.stc)
        }
        for reference in window {
            let bin = (reference.hostNs - oldest.hostNs) / Self.binNs
            if let kept = earliest[bin], lateness(kept) <= lateness(reference) { continue }
            earliest[bin] = reference
        }
        let chosen = earliest.values.sorted { $0.hostNs < $1.hostNs }
        guard chosen.count >= 4, let line = Self.leastSquares(chosen[...], origin: oldest), Self.isPlausible(line.slope)
        else {
            fit = nil
            return
        }
        fit = Fit(
            slope: line.slope, slopeError: line.slopeError, centreSTC: line.centreSTC, centreHostNs: line.centreHostNs,
            hostFrameModulus: transitModulus(slope: line.slope))
        health.hostFrameModulus = fit?.hostFrameModulus.map { Int($0) }
        health.ticksPerSecond = 1e9 / line.slope
        health.rateErrorPPM = line.slopeError / line.slope * 1e6
        health.residualRMSNs = rough.residualRMS
    }

    /// The most restrictive bounds left out on each side, of `count`: 1 %, at least one of 20 or
    /// more (a camera that sends one clock reference a frame), at most 16.
    static func trimmed(_ count: Int) -> Int { count < 20 ? 0 : max(1, min(16, count / 100)) }

    /// The smallest values offered, in order, as many as `storage` holds: the last of them is
    /// the bound that leaves the smaller ones out. Plain data over stack memory.
    struct Extremes {
        let storage: UnsafeMutableBufferPointer<Double>
        var count = 0

        mutating func keep(_ value: Double) {
            if count == storage.count {
                guard value < storage[count - 1] else { return }
                count -= 1
            }
            var index = count
            while index > 0 && storage[index - 1] > value {
                storage[index] = storage[index - 1]
                index -= 1
            }
            storage[index] = value
            count += 1
        }

        /// +infinity until `storage` is full: fewer values than it holds bound nothing.
        var bound: Double { count == storage.count ? storage[count - 1] : .infinity }
    }

    /// ns per tick of a camera clock between 1 kHz and 1 GHz.
    private static func isPlausible(_ slope: Double) -> Bool { slope.isFinite && slope >= 1 && slope <= 1e6 }

    /// The modulus the transit is counted in, from the moduli with which, from the window's
    /// first reference to each later one, each frame counter advanced by the milliseconds its own
    /// clock did (within one frame) in 99 % of cases: the bus's 2048 on both sides, or EHCI's
    /// 1024 on the host's; or `dummy_hcd`'s, which gives both sides the millisecond within the
    /// second (1000). nil when they do not keep time, or keep it in moduli that do not divide.
    private func transitModulus(slope: Double) -> UInt16? {
        guard let origin = references[first...].first, references.count - first > 1 else { return nil }
        let moduli: [UInt16] = [2048, 1024, 1000]
        var device = [0, 0, 0]
        var host = [0, 0, 0]
        func agrees(_ frames: UInt16, _ milliseconds: Double, modulus: UInt16) -> Bool {
            guard milliseconds.isFinite, abs(milliseconds) < 1e12 else { return false }
            // Wrapped into 0..<modulus from either side: a camera's clock may run backwards.
            let wrapped = Int64(milliseconds.rounded()) % Int64(modulus)
            let expected = UInt16(wrapped < 0 ? wrapped + Int64(modulus) : wrapped)
            let apart = (frames % modulus &+ modulus &- expected) % modulus
            return apart <= 1 || apart >= modulus - 1
        }
        for reference in references[(first + 1)...] {
            let deviceMs = Double(reference.stc - origin.stc) * slope / Double(Self.frameNs)
            let hostMs = Double(reference.hostNs - origin.hostNs) / Double(Self.frameNs)
            for (index, modulus) in moduli.enumerated() {
                // Differences of counters that wrap at 1000 are taken modulo 1000 from the raw
                // readings, which never exceed it; 1024 and 2048 divide the 16 bits they wrap in.
                let deviceFrames =
                    modulus == 1000
                    ? (reference.deviceFrame % 1000 &+ 1000 &- origin.deviceFrame % 1000)
                    : reference.deviceFrame &- origin.deviceFrame
                let hostFrames =
                    modulus == 1000
                    ? (reference.hostFrame % 1000 &+ 1000 &- origin.hostFrame % 1000)
                    : reference.hostFrame &- origin.hostFrame
                if agrees(deviceFrames, deviceMs, modulus: modulus) { device[index] += 1 }
                if agrees(hostFrames, hostMs, modulus: modulus) { host[index] += 1 }
            }
        }
        let needed = 0.99 * Double(references.count - first - 1)
        func keeps(_ counts: [Int]) -> UInt16? {
            moduli.indices.first { Double(counts[$0]) >= needed }.map { moduli[$0] }
        }
        guard let deviceModulus = keeps(device), let hostModulus = keeps(host), deviceModulus % hostModulus == 0
        else { return nil }
        return hostModulus
    }

    private static func leastSquares(
        _ points: ArraySlice<Reference>, origin: Reference
    )
        -> (slope: Double, slopeError: Double, centreSTC: Double, centreHostNs: Double, residualRMS: Double)?
    {
        let count = Double(points.count)
        guard points.count >= 3 else { return nil }
        var meanX = 0.0
        var meanY = 0.0
        for point in points {
            meanX += Double(point.stc - origin.stc)
            meanY += Double(point.hostNs - origin.hostNs)
        }
        meanX /= count
        meanY /= count
        var sxx = 0.0
        var sxy = 0.0
        for point in points {
            let dx = Double(point.stc - origin.stc) - meanX
            sxx += dx * dx
            sxy += dx * (Double(point.hostNs - origin.hostNs) - meanY)
        }
        guard sxx > 0 else { return nil }
        let slope = sxy / sxx
        var squares = 0.0
        for point in points {
            let residual =
                Double(point.hostNs - origin.hostNs) - meanY - slope * (Double(point.stc - origin.stc) - meanX)
            squares += residual * residual
        }
        let slopeError = (squares / (count - 2) / sxx).squareRoot()
        return (
            slope, slopeError, Double(origin.stc) + meanX, Double(origin.hostNs) + meanY, (squares / count).squareRoot()
        )
    }
}
