// libFuzzer target: the Matroska reader, through what reads a video: `MatroskaScan`, the frame
// reader, then `fieldcap validate` and `fieldcap recover` on a killed one-camera session whose
// video is the input (TestSupport's FuzzSession.materializeCamera; scripts/fuzz matroska builds
// and runs it). Nothing may crash, hang or write outside the directory, whatever the video holds.
import FieldcapMedia
import FieldcapSession
import Foundation
import SyncField
import TestSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMatroska(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let directory = NSTemporaryDirectory() + "/fieldcap-fuzz-matroska-\(getpid())"
    try? FileManager.default.removeItem(atPath: directory)
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    FuzzSession.materializeCamera(Array(UnsafeBufferPointer(start: data, count: size)), into: directory)
    _ = try? MatroskaScan(path: "\(directory)/cam.mkv")
    try? MatroskaFrames.forEachFrame(in: "\(directory)/cam.mkv") { _ in true }
    _ = SessionValidator.validateWithVideos(directory: directory)
    _ = try? SessionFinisher.recover(directory: directory, say: { _ in })
    return 0
}
