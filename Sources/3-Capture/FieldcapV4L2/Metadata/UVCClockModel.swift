/// The camera's own clock mapped onto the host's, from the clock references in a UVC camera's
/// payload headers, so that a frame's PTS (its start of exposure, in the camera's clock) becomes
/// a host time with an honest bound.
///
/// Each header the camera sent with an SCR pairs the camera's clock (STC) with the USB frame
/// counter, and `uvcvideo` pairs its own clock with the same counter as it received the header.
/// The host time of an STC reading is therefore after it (causality: latency ≥ 0) and, by the
/// two frame numbers, within one frame of `hostFrame − deviceFrame` frames (1 ms each) before the
/// reception. fieldcap fits the rate of the camera's clock against the host's by least squares
/// over `slopeWindowNs`, carries every recent header's bounds (over `boundsWindowNs`) to the PTS
/// at that rate, widened by three times the rate's error over the distance carried, and keeps
/// what all of them allow: its middle is the mapping, half its width the uncertainty.
///
/// Where the bounds contradict each other (a frame counter that is not true to the millisecond,
/// as an emulated controller's can be, or a clock that jumped), only causality is kept: the line
/// through the earliest reception, its uncertainty the frames that header took (`inconsistent`).
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
    }

    struct Reference {
        var stc: Int64
        var hostNs: Int64
        /// Frames the header took from the camera to the host, by the two frame numbers.
        var framesInTransit: Int
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

        func hostNs(at stc: Double) -> Double { centreHostNs + slope * (stc - centreSTC) }
    }

    private var fit: Fit?
    private var sinceFit = 0

    /// A USB frame: the SOF counter counts milliseconds at every speed.
    static let frameNs: Int64 = 1_000_000
    /// The fit needs this much span of the camera's clock before it maps anything.
    static let minimumSpanNs: Double = 500_000_000
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
        let reference = Reference(stc: unwrapped, hostNs: Int64(bitPattern: header.hostNs), framesInTransit: transit)
        // Received before it was sent, or long after: the camera's clock jumped. A late reception
        // alone (a busy host) is allowed for up to 50 times as long.
        let residual = fit.map { Double(reference.hostNs) - $0.hostNs(at: Double(unwrapped)) } ?? 0
        if residual < -Double(jumpNs) || residual > 50 * Double(jumpNs) {
            restart()
            health.restarts += 1
            stcBase = 0
            lastSTC = stc
            references.append(Reference(stc: 0, hostNs: reference.hostNs, framesInTransit: transit))
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
            if carried + spread < causal.high { causal = (carried + spread, referenceLow) }
        }
        let consistent = low <= high
        // The frame counters contradict each other: causality alone (received after it was
        // sent) from the earliest reception, and that header's own frames in transit below it.
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

    /// Least squares of the host's time on the camera's clock over the window.
    private mutating func refit() {
        sinceFit = 0
        let window = references[first...]
        guard window.count >= Self.minimumReferences, let oldest = window.first, let newest = window.last else {
            return
        }
        let count = Double(window.count)
        let meanX = window.reduce(0.0) { $0 + Double($1.stc - oldest.stc) } / count
        let meanY = window.reduce(0.0) { $0 + Double($1.hostNs - oldest.hostNs) } / count
        var sxx = 0.0
        var sxy = 0.0
        for reference in window {
            let dx = Double(reference.stc - oldest.stc) - meanX
            sxx += dx * dx
            sxy += dx * (Double(reference.hostNs - oldest.hostNs) - meanY)
        }
        guard sxx > 0, Double(newest.hostNs - oldest.hostNs) >= Self.minimumSpanNs else { return }
        let slope = sxy / sxx
        var squares = 0.0
        for reference in window {
            let dx = Double(reference.stc - oldest.stc) - meanX
            let residual = Double(reference.hostNs - oldest.hostNs) - meanY - slope * dx
            squares += residual * residual
        }
        let variance = count > 2 ? squares / (count - 2) : 0
        let slopeError = (variance / sxx).squareRoot()
        fit = Fit(
            slope: slope, slopeError: slopeError, centreSTC: Double(oldest.stc) + meanX,
            centreHostNs: Double(oldest.hostNs) + meanY)
        health.ticksPerSecond = 1e9 / slope
        health.rateErrorPPM = slopeError / slope * 1e6
        health.residualRMSNs = (squares / count).squareRoot()
    }
}
