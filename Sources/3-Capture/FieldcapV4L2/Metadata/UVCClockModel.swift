/// The camera's own clock mapped onto the host's, from the clock references in a UVC camera's
/// payload headers, so that a frame's PTS (its start of exposure, in the camera's clock) becomes
/// a host time with an honest bound.
///
/// Each header the camera sent with an SCR pairs the camera's clock (STC) with the USB frame
/// counter, and `uvcvideo` pairs its own clock with the same counter as it received the header.
/// The host time of an STC reading is therefore after it (causality: latency ≥ 0) and, by the
/// two frame numbers, within one frame of `hostFrame − deviceFrame` frames (1 ms each) before the
/// reception. fieldcap fits the rate of the camera's clock against the host's by least squares
/// over `slopeWindowNs` (through each tenth of a second's earliest reception), carries every
/// recent header's bounds (over `boundsWindowNs`) to the PTS at that rate, widened by three times the rate's error over the distance carried, and keeps
/// what all of them allow: its middle is the mapping, half its width the uncertainty.
///
/// Where the bounds contradict each other, or the frame counters do not keep time with their
/// clocks (an emulated controller's need not), only causality is kept: the earliest reception
/// bounds the time from above, and that header's frames in transit (or, without counters to
/// trust, one frame) from below (`inconsistent`).
/// A header received more than `jumpNs` before the fit says it was sent, or 50 times that after
/// (the camera reset its clock, or came back after an unplug), starts the model again.
///
/// The 32-bit STC and PTS wrap (at 48 MHz, every 89 s) and the 11-bit frame counter every
/// 2.048 s; both are unwrapped against the previous header.
///
/// Thread-bound (capture): fed and asked on the camera's thread.
public struct UVCClockModel: Sendable {
    /// A mapped instant: the host clock's time (`uvcvideo`'s clock) and a bound on its error.
    public struct Mapped: Sendable, Equatable {
        public var hostNs: Int64
        public var uncertaintyNs: UInt64
        /// False when the frame counters contradicted the fit and only causality bounds it.
        public var consistent: Bool
    }

    /// What the model has seen, for the sidecar.
    public struct Health: Sendable, Equatable {
        /// Clock references taken in.
        public var references: Int = 0
        /// Times the model started again after a jump.
        public var restarts: Int = 0
        /// The camera's clock rate against the host's, ticks per second, and its error in ppm:
        /// nil before the fit has enough span.
        public var ticksPerSecond: Double?
        public var rateErrorPPM: Double?
        /// The residuals of the rate fit, ns (RMS): the jitter of the path from camera to host.
        public var residualRMSNs: Double?
        /// Mappings made, and those where the frame counters contradicted the fit.
        public var mapped: Int = 0
        public var inconsistent: Int = 0
        /// Whether the frame counters kept time at the last fit; nil before one.
        public var frameCountersKeepTime: Bool?
    }

    struct Reference {
        var stc: Int64
        var hostNs: Int64
        /// Frames the header took from the camera to the host, by the two frame numbers.
        var framesInTransit: Int
        var deviceFrame: UInt16
        var hostFrame: UInt16
    }

    public var slopeWindowNs: Int64
    public var boundsWindowNs: Int64
    public var jumpNs: Int64
    public private(set) var health = Health()

    private var references: [Reference] = []
    private var first = 0
    private var lastSTC: UInt32 = 0
    private var stcBase: Int64 = 0
    /// The host's time against the camera's clock: ns per tick, its standard error, through the
    /// centre of the window.
    struct Fit {
        var slope: Double
        var slopeError: Double
        var centreSTC: Double
        var centreHostNs: Double
        /// Whether both frame counters kept time with their clocks over the window (a
        /// millisecond a frame, within one), so that their difference bounds the transit.
        var framesKeepTime: Bool

        func hostNs(at stc: Double) -> Double { centreHostNs + slope * (stc - centreSTC) }
    }

    private var fit: Fit?
    private var sinceFit = 0

    /// A USB frame: the SOF counter counts milliseconds at every speed.
    static let frameNs: Int64 = 1_000_000
    /// The fit needs this much span of the camera's clock (20 of its bins) before it maps anything.
    static let minimumSpanNs: Double = 2_000_000_000
    static let minimumReferences = 16
    /// The fit is made again after this many new references.
    static let refitEvery = 32

    public init(
        slopeWindowNs: Int64 = 20_000_000_000, boundsWindowNs: Int64 = 2_000_000_000, jumpNs: Int64 = 20_000_000
    ) {
        self.slopeWindowNs = slopeWindowNs
        self.boundsWindowNs = boundsWindowNs
        self.jumpNs = jumpNs
    }

    /// Takes in a header's clock reference; headers without an SCR are ignored.
    public mutating func add(_ header: UVCPayloadHeader) {
        guard let stc = header.stc, let deviceFrame = header.deviceFrame else { return }
        let unwrapped = unwrap(stc)
        let transit = Int((header.hostFrame &- deviceFrame) & UVCPayloadHeader.frameMask)
        let reference = Reference(
            stc: unwrapped, hostNs: Int64(bitPattern: header.hostNs), framesInTransit: transit,
            deviceFrame: deviceFrame, hostFrame: header.hostFrame)
        // Received before it was sent, or long after: the camera's clock jumped. A late reception
        // alone (a busy host) is allowed for up to 50 times as long.
        let residual = fit.map { Double(reference.hostNs) - $0.hostNs(at: Double(unwrapped)) } ?? 0
        if residual < -Double(jumpNs) || residual > 50 * Double(jumpNs) {
            restart()
            health.restarts += 1
            stcBase = 0
            lastSTC = stc
            var first = reference
            first.stc = 0
            references.append(first)
        } else {
            references.append(reference)
        }
        health.references += 1
        dropOld()
        sinceFit += 1
        if fit == nil || sinceFit >= Self.refitEvery { refit() }
    }

    /// The host time of `pts`, read in the same header as `stc` (or the nearest one), so that
    /// the two wrap together; nil until the fit has the span it needs.
    public mutating func map(pts: UInt32, besideSTC stc: UInt32) -> Mapped? {
        guard let fit, active > 0 else { return nil }
        // The PTS lies within half a wrap of the STC read beside it: unwrapped by the same base.
        let anchor = unwrapNoUpdate(stc)
        let x = Double(anchor + Int64(Int32(bitPattern: pts &- stc)))
        // Every recent reference bounds the host time at x: its own (after the camera read its
        // clock, within its frames in transit), carried to x at the fitted rate, and widened by
        // three times the rate's error over the distance carried.
        var low = -Double.infinity
        var high = Double.infinity
        var causal = (high: Double.infinity, low: -Double.infinity)
        let newest = references[references.count - 1].hostNs
        for reference in references[first...].reversed() {
            if newest - reference.hostNs > boundsWindowNs { break }
            let distance = x - Double(reference.stc)
            let carried = Double(reference.hostNs) + fit.slope * distance
            let spread = 3 * fit.slopeError * abs(distance)
            let transit = Double(reference.framesInTransit)
            let referenceLow = carried - (transit + 1) * Double(Self.frameNs) - spread
            let referenceHigh = carried - max(0, transit - 1) * Double(Self.frameNs) + spread
            low = max(low, referenceLow)
            high = min(high, referenceHigh)
            if carried + spread < causal.high {
                let below = fit.framesKeepTime ? referenceLow : carried - Double(Self.frameNs) - spread
                causal = (carried + spread, below)
            }
        }
        let consistent = fit.framesKeepTime && low <= high
        // The frame counters contradict each other, or do not keep time: causality alone
        // (received after it was sent) from the earliest reception, and below it that header's
        // frames in transit, or, where the counters say nothing, one frame: the earliest of a
        // window's receptions is taken to have come within one USB frame.
        if !consistent { (high, low) = causal }
        let centre = (low + high) / 2
        let uncertainty = (high - low) / 2
        guard centre.isFinite, uncertainty.isFinite, uncertainty >= 0 else { return nil }
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
        sinceFit = 0
        stcBase = 0
    }

    private var active: Int { references.count - first }

    private mutating func unwrap(_ stc: UInt32) -> Int64 {
        if references.isEmpty && first == 0 {
            stcBase = 0
            lastSTC = stc
            return 0
        }
        stcBase += Int64(Int32(bitPattern: stc &- lastSTC))
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

    /// Whether, from the window's first reference to each later one, each frame counter
    /// advanced (modulo its 11 bits) by the milliseconds its own clock did, within two frames, in
    /// 95 % of cases. An emulated controller's need not: `dummy_hcd` gives its gadget the
    /// millisecond within the second and its host a count of its own timer's runs.
    private func framesKeepTime(slope: Double) -> Bool {
        guard let origin = references[first...].first else { return false }
        var agreeing = 0
        var pairs = 0
        func agrees(_ frames: UInt16, _ milliseconds: Double) -> Bool {
            let expected = UInt16(truncatingIfNeeded: Int64(milliseconds.rounded())) & UVCPayloadHeader.frameMask
            let apart = (frames &- expected) & UVCPayloadHeader.frameMask
            return apart <= 2 || apart >= UVCPayloadHeader.frameMask - 1
        }
        for reference in references[(first + 1)...] {
            pairs += 1
            let device = agrees(
                reference.deviceFrame &- origin.deviceFrame,
                Double(reference.stc - origin.stc) * slope / Double(Self.frameNs))
            let host = agrees(
                reference.hostFrame &- origin.hostFrame, Double(reference.hostNs - origin.hostNs) / Double(Self.frameNs)
            )
            if device && host { agreeing += 1 }
        }
        return pairs > 0 && Double(agreeing) >= 0.95 * Double(pairs)
    }

    /// The host's time against the camera's clock over the window: least squares through the
    /// earliest reception of each tenth of a second. Receptions come late by how busy the host
    /// was, and the lateness comes in stretches that would tilt a fit through all of them; the
    /// earliest of each stretch lie on the line of the send times, give or take the shortest
    /// transit.
    private mutating func refit() {
        sinceFit = 0
        let window = references[first...]
        guard window.count >= Self.minimumReferences, let oldest = window.first, let newest = window.last,
            Double(newest.hostNs - oldest.hostNs) >= Self.minimumSpanNs,
            let rough = Self.leastSquares(Array(window), origin: oldest)
        else { return }
        var earliest: [Int64: Reference] = [:]
        for reference in window {
            let bin = (reference.hostNs - oldest.hostNs) / Self.binNs
            let late = Double(reference.hostNs - oldest.hostNs) - rough.slope * Double(reference.stc - oldest.stc)
            if let kept = earliest[bin],
                Double(kept.hostNs - oldest.hostNs) - rough.slope * Double(kept.stc - oldest.stc) <= late
            {
                continue
            }
            earliest[bin] = reference
        }
        let chosen = earliest.count >= 4 ? earliest.values.sorted { $0.hostNs < $1.hostNs } : Array(window)
        guard let line = Self.leastSquares(chosen, origin: oldest) else { return }
        fit = Fit(
            slope: line.slope, slopeError: line.slopeError, centreSTC: line.centreSTC,
            centreHostNs: line.centreHostNs, framesKeepTime: framesKeepTime(slope: line.slope))
        health.frameCountersKeepTime = fit?.framesKeepTime
        health.ticksPerSecond = 1e9 / line.slope
        health.rateErrorPPM = line.slopeError / line.slope * 1e6
        health.residualRMSNs = rough.residualRMS
    }

    /// The bins of the rate fit.
    static let binNs: Int64 = 100_000_000

    private static func leastSquares(
        _ points: [Reference], origin: Reference
    )
        -> (slope: Double, slopeError: Double, centreSTC: Double, centreHostNs: Double, residualRMS: Double)?
    {
        let count = Double(points.count)
        guard points.count >= 3 else { return nil }
        let meanX = points.reduce(0.0) { $0 + Double($1.stc - origin.stc) } / count
        let meanY = points.reduce(0.0) { $0 + Double($1.hostNs - origin.hostNs) } / count
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
