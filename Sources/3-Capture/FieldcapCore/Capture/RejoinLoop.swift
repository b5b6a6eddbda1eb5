import SyncField

/// What a capture source decides when its device goes away, apart from the device's own calls:
/// stream; at a loss (`DeviceError.Code.gone`) with a rejoin policy, tell the absence, take the
/// device up again and stream on; give up when it came back more often within a minute than
/// the policy allows, saying so; end cleanly when the stop comes while the device is away.
/// `V4L2Camera` and `IIOIMU` hand it their streaming and their taking up; tests hand it
/// scripted ones.
///
/// Capture-thread-bound.
public struct RejoinLoop {
    let policy: RejoinPolicy?
    let presence: StreamPresence?
    /// Returns taken so far.
    public private(set) var returns = 0

    public init(policy: RejoinPolicy?, presence: StreamPresence?) {
        self.policy = policy
        self.presence = presence
    }

    /// Runs `stream` until it returns (the stop), or fails with anything but a loss the policy
    /// covers.
    ///
    /// - Parameters:
    ///   - stream: streams from the device as it is set up now; returns at the stop.
    ///   - takeUpAgain: lets the lost device go, waits for it and sets it up as it was; false
    ///     when the stop came first. Throws when the device came back and was refused.
    public mutating func run(
        stream: () throws -> Void, takeUpAgain: (RejoinPolicy, StreamPresence) throws -> Bool
    ) throws {
        while true {
            do {
                try stream()
                return
            } catch let loss as DeviceError where loss.code == .gone {
                guard let policy, let presence else { throw loss }
                let now = MonotonicClock.now()
                let recent = presence.returns(withinNs: RejoinPolicy.flapWindowNs, before: now)
                guard recent < policy.maxReturns else {
                    var ended = loss
                    ended.hint +=
                        (ended.hint.isEmpty ? "" : "; ")
                        + "it had come back \(recent) times within a minute, the most rejoin= allows:"
                        + " not waited for again (a failing cable or hub?)"
                    throw ended
                }
                presence.left(atNs: now, reason: "\(loss)")
                guard try takeUpAgain(policy, presence) else { return }
                returns += 1
            }
        }
    }
}
