import FieldcapSystem
import Glibc

/// The face detector's shared library (`libFieldcapFaceDetector.so`, Sources/1-Platform/
/// CFaceDetector: MTCNN on OpenCV's DNN module, built by scripts/build-face-detector), opened
/// with dlopen the first time faces are covered. fieldcap does not link it: OpenCV and what it
/// needs weigh about 250 MiB on a bare rig, and a rig that never covers faces should neither
/// need them installed nor map them.
///
/// It is looked for in `FIELDCAP_FACE_DETECTOR` (a path: then only there), beside the running
/// program (where scripts/build-release puts it), then in `../lib/fieldcap/` from it (an
/// installed layout: /usr/local/bin/fieldcap, /usr/local/lib/fieldcap/).
final class FaceDetectorLibrary: @unchecked Sendable {
    static let fileName = "libFieldcapFaceDetector.so"
    /// The interface version the calls below are written for (`FC_FACE_DETECTOR_ABI`).
    static let abi: Int32 = 1
    /// What the library needs at run time, as Debian names it.
    static let debianPackages = "libopencv-dnn406 libopencv-imgproc406"

    typealias Open =
        @convention(c) (UnsafePointer<CChar>?, Int32, UnsafeMutablePointer<CChar>?, Int) -> OpaquePointer?
    typealias Detect =
        @convention(c) (
            OpaquePointer?, UnsafePointer<UInt8>?, Int32, Int32, Int32, Int32, Int32, UnsafePointer<Float>?, Float,
            UnsafeMutablePointer<Float>?, Int32, UnsafeMutablePointer<CChar>?, Int
        ) -> Int32
    typealias Close = @convention(c) (OpaquePointer?) -> Void

    let path: String
    let open: Open
    let detect: Detect
    let close: Close

    /// The library, opened once per process, or why it cannot be.
    static let shared: Result<FaceDetectorLibrary, FaceCoverError> = {
        do throws(FaceCoverError) { return .success(try FaceDetectorLibrary()) } catch { return .failure(error) }
    }()

    private init() throws(FaceCoverError) {
        let candidates = Self.candidates()
        guard let path = candidates.first(where: { access($0, F_OK) == 0 }) else {
            throw FaceCoverError(
                "the face detector's library \(Self.fileName) is not installed (looked in "
                    + candidates.joined(separator: ", ")
                    + "): build it with scripts/build-face-detector DIRECTORY-OF-FIELDCAP (scripts/build-release "
                    + "does), or give its path in FIELDCAP_FACE_DETECTOR")
        }
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "dlopen failed"
            // The usual cause on a rig: OpenCV's runtime libraries are not installed.
            let hint =
                why.contains("cannot open shared object file")
                ? ": a library it needs is missing (it needs Debian's \(Self.debianPackages): "
                    + "apt-get install \(Self.debianPackages))" : ""
            throw FaceCoverError("cannot load the face detector \(path): \(why)\(hint)")
        }
        func symbol<F>(_ name: String, as _: F.Type) throws(FaceCoverError) -> F {
            guard let address = dlsym(handle, name) else {
                throw FaceCoverError("\(path) has no \(name): it is not fieldcap's face detector, or another version")
            }
            return unsafeBitCast(address, to: F.self)
        }
        typealias ABI = @convention(c) () -> Int32
        let abi = try symbol("fc_face_detector_abi", as: ABI.self)()
        guard abi == Self.abi else {
            throw FaceCoverError(
                "\(path) has interface \(abi), this fieldcap needs \(Self.abi): install the library built with it")
        }
        self.path = path
        open = try symbol("fc_face_detector_open", as: Open.self)
        detect = try symbol("fc_face_detector_detect", as: Detect.self)
        close = try symbol("fc_face_detector_close", as: Close.self)
    }

    static func candidates() -> [String] {
        // A path given is the only one: it was given to use that library and no other.
        if let given = getenv("FIELDCAP_FACE_DETECTOR").map({ String(cString: $0) }), !given.isEmpty {
            return [given]
        }
        var paths: [String] = []
        if let program = ProgramPath.directory() {
            paths.append("\(program)/\(fileName)")
            paths.append("\(PathName.directory(of: program))/lib/fieldcap/\(fileName)")
        }
        return paths
    }
}

/// Where the running program lives (`/proc/self/exe`'s directory), where its companions are.
enum ProgramPath {
    static func directory() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return PathName.directory(of: path)
    }
}
