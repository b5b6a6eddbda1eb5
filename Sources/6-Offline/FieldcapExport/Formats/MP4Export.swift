import CAVCodec
import FieldcapCore
import FieldcapEncode
import FieldcapFaces

/// `fieldcap export --format mp4`: each camera as an H.264 MP4 anyone can play (a browser, a
/// phone, VLC, AllSpark's server page), `<camera>.mp4` in the output directory. For people and
/// players, not for measurement: the picture is lossy (libx264, `H264Encoder`), and the frames'
/// `capture_ns` stay in the session's frame logs. Each frame is shown at its own time (its
/// `capture_ns` since the camera's first frame, in 1/90000 s), so gaps and uneven intervals
/// play as they were recorded.
enum MP4Export {
    struct Options {
        var settings = H264Encoder.Settings()
        var faces: FaceCover.Settings?
    }

    static func write(
        session: ExportSession, streams: [ExportSession.Stream], directory: String, options: Options,
        progress: (Int) -> Void, isCancelled: () -> Bool
    ) throws(ExportError) -> [String] {
        let cameras = streams.filter(\.isCamera)
        guard !cameras.isEmpty else {
            throw ExportError(.request, "--format mp4 needs a camera, and the streams exported have none")
        }
        for camera in cameras {
            if let format = camera.format, let problem = I420Picture.problem(with: format) {
                throw ExportError(.session, "\(camera.id) cannot be an MP4: \(problem)")
            }
        }
        try makeDirectory(directory)
        var lines: [String] = []
        var done = 0
        for camera in cameras {
            let format = camera.format!
            let picture = try I420Picture(format: format)
            let encoder: H264Encoder
            do throws(EncodeError) {
                // One keyframe every two seconds of the nominal rate: a player seeks within that.
                var settings = options.settings
                settings.keyframeInterval = max(1, Int((camera.nominalRate * 2).rounded()))
                if camera.nominalRate > 0 { settings.framesPerSecond = camera.nominalRate }
                settings.fullRange = format.pixelFormat == .mjpeg || format.pixelFormat.bayerPattern != nil
                encoder = try H264Encoder(
                    width: format.width, height: format.height, settings: settings, globalHeader: true)
            } catch { throw ExportError(.output, "\(camera.id): \(error.description)") }
            let path = "\(directory)/\(camera.id).mp4"
            // The nominal frame interval (30 fps where the rate is unknown): the last frame's.
            let ticks = Double(H264Encoder.timeBase.den) / Double(H264Encoder.timeBase.num)
            let frameDuration = Int64((ticks / (camera.nominalRate > 0 ? camera.nominalRate : 30)).rounded())
            let writer = try MP4Writer(path: path, encoder: encoder, frameDuration: frameDuration)
            let reader = try CameraReader(
                session: session, stream: camera, coveringFaces: camera.holdsDepth([]) ? nil : options.faces)
            defer { reader.cancel() }
            var first: UInt64?
            var lastPts: Int64 = -1
            var frames = 0
            func emit(_ packet: UnsafeMutablePointer<AVPacket>) throws { try writer.write(packet) }
            do {
                while let frame = try reader.next() {
                    if isCancelled() { throw ExportError(.cancelled, "cancelled") }
                    let start = first ?? frame.captureNs
                    first = start
                    let since = frame.captureNs >= start ? frame.captureNs - start : 0
                    // A time no earlier than the last frame's: H.264 needs them increasing.
                    let pts = max(lastPts + 1, Int64(since / 100_000 * 9 + (since % 100_000) * 9 / 100_000))
                    lastPts = pts
                    try encoder.encode(
                        pts: pts, fill: { planes in try picture.fill(planes, from: frame.bytes) }, emit: emit)
                    frames += 1
                    done += 1
                    if done % 30 == 0 { progress(done) }
                }
                try encoder.finish(emit: emit)
                try writer.finish()
            } catch let error as ExportError {
                throw error
            } catch let error as EncodeError {
                throw ExportError(.output, "\(camera.id): \(error.description)")
            } catch {
                throw ExportError(.output, "\(camera.id): \(error)")
            }
            progress(done)
            lines.append(
                "\(camera.id).mp4: \(frames) frames of \(format.width)x\(format.height) "
                    + "H.264 (from \(format.pixelFormat.rawValue))"
            )
            if let faces = reader.facesReport {
                try ExportFile.write(
                    Array((faces.json + "\n").utf8), to: "\(directory)/\(camera.id).faces_covered.json")
                lines.append("\(camera.id): \(faces.summary) (\(camera.id).faces_covered.json)")
            }
        }
        return lines
    }
}
