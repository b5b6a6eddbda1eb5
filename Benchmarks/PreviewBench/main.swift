// Encodes raw frames from a file with the preview's JPEGEncoder and reports the CPU time per
// frame and the bytes, for `Benchmarks/preview-load` to set beside FFmpeg's mjpeg encoder on the
// same frames.
//
//   PreviewBench FRAMES.yuv WIDTH HEIGHT [QUALITY] [FORMAT]     # FORMAT: YUYV (default), NV12, GREY
import FieldcapCore
import FieldcapEncode
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 4, let width = Int(arguments[2]), let height = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: PreviewBench FRAMES.yuv WIDTH HEIGHT [QUALITY] [FORMAT]\n".utf8))
    exit(64)
}
let quality = arguments.count > 4 ? Int(arguments[4]) ?? 80 : 80
let pixelFormat = arguments.count > 5 ? VideoFormat.PixelFormat(rawValue: arguments[5]) ?? .yuyv : .yuyv
let format = VideoFormat(width: width, height: height, pixelFormat: pixelFormat)
let frameBytes = pixelFormat.frameBytes(width: width, height: height)!
let data = try Data(contentsOf: URL(fileURLWithPath: arguments[1]))
let frames = data.count / frameBytes
let encoder = try JPEGEncoder(format: format, quality: quality)

func cpuNow() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

var bytes = 0
let started = cpuNow()
data.withUnsafeBytes { all in
    for index in 0..<frames {
        let frame = UnsafeRawBufferPointer(rebasing: all[(index * frameBytes)..<((index + 1) * frameBytes)])
        bytes += (try? encoder.encode(frame).count) ?? 0
    }
}
let cpu = cpuNow() - started
print(
    String(
        format: "{\"frames\": %d, \"cpu_s\": %.6f, \"ms_per_frame\": %.4f, \"bytes_per_frame\": %d}", frames, cpu,
        cpu / Double(max(1, frames)) * 1000, bytes / max(1, frames)))
