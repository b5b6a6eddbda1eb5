import FieldcapPreview
import FieldcapRig
import Hummingbird
import HummingbirdWebSocket

/// `GET /api/v1/live/{stream}`: a WebSocket of a sensor stream's samples as they are captured,
/// for the web page's plots: one JSON text message every 20 ms or so,
/// `{"stream":ID,"channels":[...],"samples":[[capture_ns,v1,v2,...],...]}`, at most `max_rate`
/// samples a second (default 200: a plot of 10 s needs no more; 1 to 10,000). Whether or not a
/// recording runs; the recording keeps every sample whatever this sends. A client that falls
/// behind loses whole messages, the oldest first.
enum LiveSamplesSocket {
    static let defaultRate = 200.0

    static func add(to router: Router<BasicWebSocketRequestContext>, rig: RigService) {
        router.ws(
            "/api/v1/live/{stream}",
            shouldUpgrade: { request, context in
                // An unknown stream or a bad rate is not upgraded: the API's router answers it.
                guard let id = context.parameters.get("stream"), rig.live.taps[id] != nil,
                    rate(request.uri.queryParameters["max_rate"].map(String.init)) != nil
                else { return .dontUpgrade }
                return .upgrade([:])
            }
        ) { inbound, outbound, context in
            guard let id = context.requestContext.parameters.get("stream"),
                let sensor = rig.live.streams.first(where: { $0.id == id }), let batches = rig.live.samples(of: id),
                let maxRate = rate(context.request.uri.queryParameters["max_rate"].map(String.init))
            else { return }
            let head =
                "{\"stream\":\(FoxgloveProtocol.text(.string(id))),\"channels\":"
                + FoxgloveProtocol.text(.array(sensor.channels.map { .string($0) })) + ",\"samples\":["
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Reading is how a close is noticed; what a client sends is ignored.
                group.addTask { for try await _ in inbound {} }
                group.addTask {
                    var cap = LiveRateCap(rate: maxRate)
                    for await batch in batches {
                        var text = head
                        var first = true
                        for sample in batch where cap.admits(sample.captureNs) {
                            text += first ? "[" : ",["
                            first = false
                            text += String(sample.captureNs)
                            for value in sample.values { text += value.isFinite ? ",\(value)" : ",null" }
                            text += "]"
                        }
                        guard !first else { continue }
                        try await outbound.write(.text(text + "]}"))
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// `max_rate`'s value: nil for one that is not a number from 1 to 10,000.
    static func rate(_ text: String?) -> Double? {
        guard let text else { return defaultRate }
        guard let rate = Double(text), rate >= 1, rate <= 10_000 else { return nil }
        return rate
    }
}
