import FieldcapCore
import FieldcapFaces
import Synchronization

/// The live previews of a rig's cameras: one `PreviewStream` for each camera whose format has a
/// JPEG path, and for the others the reason they have none. Thread-safe.
public final class Previews: Sendable {
    public let streams: [String: PreviewStream]
    /// Camera stream id → why it has no preview.
    public let unavailable: [String: String]
    /// The camera ids in the rig's order, with or without a preview.
    public let cameraIds: [String]
    private let viewersChanged = Mutex<(@Sendable (Int) -> Void)?>(nil)

    /// What the streams call when their viewers come and go, pointed at the hub once it exists.
    private final class Relay: Sendable {
        let target = Mutex<(@Sendable () -> Void)?>(nil)
        func fire() { target.withLock { $0 }?() }
    }

    /// - Parameters:
    ///   - cameras: the rig's video streams, as their sources describe them.
    ///   - maxRate: frames a second each preview encodes at most.
    ///   - quality: JPEG quality, 1 to 100.
    ///   - faces: cover the faces in every preview (nil: as captured); a camera whose faces
    ///     cannot be covered has no preview, never one showing them.
    public init(cameras: [StreamDescriptor], maxRate: Double = 10, quality: Int = 80, faces: FaceCover.Settings? = nil)
    {
        var streams: [String: PreviewStream] = [:]
        var unavailable: [String: String] = [:]
        let relay = Relay()
        for camera in cameras where camera.kind == .video {
            guard let format = camera.videoFormat else {
                unavailable[camera.id] = "its format is unknown"
                continue
            }
            do {
                streams[camera.id] = try PreviewStream(
                    id: camera.id, format: format, maxRate: maxRate, quality: quality,
                    cameraRate: camera.nominalRate > 0 ? camera.nominalRate : 30, faces: faces,
                    onViewers: { relay.fire() })
            } catch {
                unavailable[camera.id] = "\(error)"
            }
        }
        self.streams = streams
        self.unavailable = unavailable
        cameraIds = cameras.filter { $0.kind == .video }.map(\.id)
        relay.target.withLock {
            $0 = { [weak self] in
                guard let self, let handler = self.viewersChanged.withLock({ $0 }) else { return }
                handler(self.viewerCount)
            }
        }
    }

    /// Each preview's tap, by stream id, for the recorder (`Recorder.Options.frameTaps`).
    public var taps: [String: FrameTap] { streams.mapValues(\.tap) }

    /// The taps for a capture of `streams`: one for each camera that came up as its preview
    /// expects it (a camera granted another format this time gets none).
    public func taps(for streams: [StreamDescriptor]) -> [String: FrameTap] {
        taps.filter { id, tap in streams.contains { $0.id == id && $0.videoFormat == tap.format } }
    }

    /// Viewers of every preview together.
    public var viewerCount: Int { streams.values.reduce(0) { $0 + $1.viewerCount } }

    /// Tells `handler` the number of viewers whenever a preview gets its first viewer or loses
    /// its last.
    public func onViewersChanged(_ handler: @escaping @Sendable (Int) -> Void) {
        viewersChanged.withLock { $0 = handler }
    }

    public func close() {
        for stream in streams.values { stream.close() }
    }
}
