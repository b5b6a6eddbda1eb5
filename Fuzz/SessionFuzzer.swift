// libFuzzer target: `fieldcap validate` and `fieldcap recover` on session directories made of
// arbitrary files (scripts/fuzz builds and runs it). Neither may crash, hang or write outside
// the directory, whatever the files hold.
import FieldcapMedia
import FieldcapSession
import Foundation
import SyncField
import TestSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSession(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let directory = NSTemporaryDirectory() + "/fieldcap-fuzz-\(getpid())"
    try? FileManager.default.removeItem(atPath: directory)
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    FuzzSession.materialize(Array(UnsafeBufferPointer(start: data, count: size)), into: directory)
    _ = SessionValidator.validateWithVideos(directory: directory)
    _ = try? SessionFinisher.recover(directory: directory, say: { _ in })
    return 0
}
