extension CameraCalibration {
    /// Kalibr's radtan has four (k1 k2 p1 p2); OpenCV adds k3 (five), the rational model's k4-k6
    /// (eight), thin prism (twelve) and tilted sensor (fourteen). Fisheye is k1-k4.
    static func coefficientCounts(of model: DistortionModel) -> [Int] {
        switch model {
        case .radialTangential: [4, 5, 8, 12, 14]
        case .equidistant: [4]
        case .none: [0]
        }
    }

    static func countsInWords(_ counts: [Int]) -> String {
        guard let last = counts.last, counts.count > 1 else { return "\(counts.first ?? 0)" }
        return counts.dropLast().map(String.init).joined(separator: ", ") + " or \(last)"
    }

    /// The first thing that makes the values unusable, in words; nil when there is none. The
    /// file readers check each value at its line first; this also guards what a sidecar holds.
    var problem: String? {
        if width <= 0 || height <= 0 {
            return "resolution \(width)x\(height) is not an image size: give the calibrated width and height"
        }
        for (key, value) in [("fx", fx), ("fy", fy), ("cx", cx), ("cy", cy)] where !value.isFinite {
            return "\(key) is \(value): give a finite number"
        }
        if fx <= 0 || fy <= 0 { return "focal lengths fx \(fx) and fy \(fy) must both be above 0" }
        let counts = Self.coefficientCounts(of: distortionModel)
        if !counts.contains(distortion.count) {
            return "distortion model \(distortionModel.rawValue.quoted) needs \(Self.countsInWords(counts))"
                + " coefficients, found \(distortion.count)"
        }
        if distortion.contains(where: { !$0.isFinite }) { return "a distortion coefficient is not finite" }
        if let cameraFromIMU, let problem = Self.rigidProblem(cameraFromIMU, key: "T_cam_imu") { return problem }
        if let timeshiftCamIMU, !timeshiftCamIMU.isFinite { return "timeshift_cam_imu is not finite" }
        return nil
    }

    /// What keeps a row-major 4x4 from being a rigid transform, nil when nothing does. The
    /// exports invert it as a rotation and a translation, so a scaled or sheared matrix would
    /// come out wrong without a word; the tolerance admits values rounded to a few digits.
    static func rigidProblem(_ matrix: [Double], key: String) -> String? {
        guard matrix.count == 16 else { return "\(key) must be 4 rows of 4 numbers, found \(matrix.count) numbers" }
        if matrix.contains(where: { !$0.isFinite }) { return "\(key) holds a value that is not finite" }
        let lastRow = Array(matrix[12..<16])
        if lastRow != [0, 0, 0, 1] {
            let found = lastRow.map { "\($0)" }.joined(separator: " ")
            return "\(key)'s last row must be 0 0 0 1, found \(found): give a rigid transform"
        }
        let r = { (row: Int, col: Int) in matrix[row * 4 + col] }
        for i in 0..<3 {
            for j in 0..<3 {
                let dot = (0..<3).reduce(0.0) { $0 + r(i, $1) * r(j, $1) }
                if abs(dot - (i == j ? 1 : 0)) > 1e-2 {
                    return "\(key)'s upper-left 3x3 is not a rotation (rows not orthonormal): give a rigid transform"
                }
            }
        }
        let determinant =
            r(0, 0) * (r(1, 1) * r(2, 2) - r(1, 2) * r(2, 1)) - r(0, 1) * (r(1, 0) * r(2, 2) - r(1, 2) * r(2, 0))
            + r(0, 2) * (r(1, 0) * r(2, 1) - r(1, 1) * r(2, 0))
        if determinant < 0 {
            return "\(key)'s upper-left 3x3 is a reflection, not a rotation: check the axes' signs"
        }
        return nil
    }
}
