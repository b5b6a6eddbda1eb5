import Foundation

/// Calibration files as the tools write them, kept as text so the tests need no resources.
enum Fixture {
    /// Kalibr's camchain as its wiki shows one (cam0's values are the wiki's; cam1 is a pinhole
    /// here, where the wiki's is omni), with the keys fieldcap does not keep.
    static let kalibr = """
        cam0:
          camera_model: pinhole
          intrinsics: [461.629, 460.152, 362.680, 246.049]
          distortion_model: radtan
          distortion_coeffs: [-0.27695497, 0.06712482, 0.00087538, 0.00011556]
          T_cam_imu:
          - [0.01779318, 0.99967549,-0.01822936, 0.07008565]
          - [-0.9998017, 0.01795239, 0.00860714,-0.01771023]
          - [0.00893160, 0.01807260, 0.99979678, 0.00399246]
          - [0.0, 0.0, 0.0, 1.0]
          timeshift_cam_imu: -8.121e-05
          rostopic: /cam0/image_raw
          cam_overlaps: [1]
          resolution: [752, 480]
        cam1:
          camera_model: pinhole
          intrinsics: [460.883, 459.567, 367.568, 248.175]
          distortion_model: equidistant
          distortion_coeffs: [-0.0033, 0.0226, -0.0243, 0.0098]
          T_cn_cnm1:
          - [0.99998854, 0.00216014, 0.00427195,-0.11003785]
          - [-0.00221074, 0.99992702, 0.01187697, 0.00045792]
          - [-0.00424598,-0.01188627, 0.99992034,-0.00064487]
          - [0.0, 0.0, 0.0, 1.0]
          T_cam_imu:
          - [0.01567142, 0.99978002,-0.01393890,-0.03997893]
          - [-0.99966203, 0.01595569, 0.02052858,-0.01735317]
          - [0.02074680, 0.01361186, 0.99969210, 0.00326338]
          - [0.0, 0.0, 0.0, 1.0]
          timeshift_cam_imu: -8.681e-05
          rostopic: /cam1/image_raw
          cam_overlaps: [0]
          resolution: [752, 480]

        """

    /// What OpenCV 4's calibration sample (samples/cpp/tutorial_code/calib3d/camera_calibration)
    /// saves: `%YAML:1.0`, the sample's bookkeeping keys, a 5x1 `distortion_coefficients`.
    static let openCVSample = """
        %YAML:1.0
        ---
        calibration_time: "Wed 08 Jan 2025 14:23:51 CET"
        nr_of_frames: 25
        image_width: 640
        image_height: 480
        board_width: 9
        board_height: 6
        square_size: 50.
        marker_size: 25.
        # flags:  +fix_aspectRatio +fix_principal_point +zero_tangent_dist
        flags: 14
        fisheye_model: 0
        camera_matrix: !!opencv-matrix
           rows: 3
           cols: 3
           dt: d
           data: [ 6.5746697810243404e+02, 0., 3.1950000000000000e+02, 0.,
               6.5746697810243404e+02, 2.3950000000000000e+02, 0., 0., 1. ]
        distortion_coefficients: !!opencv-matrix
           rows: 5
           cols: 1
           dt: d
           data: [ -4.1802327018241026e-01, 5.0715243805833121e-01, 0., 0.,
               -5.7843596847939704e-01 ]
        avg_reprojection_error: 3.8441346462381665e-01
        per_view_reprojection_errors: !!opencv-matrix
           rows: 3
           cols: 1
           dt: f
           data: [ 5.04357755e-01, 4.85754758e-01, 3.99563968e-01 ]

        """

    /// The sample's older output, as OpenCV's repository still ships it (out_camera_data.yml):
    /// capitalised keys, three-digit exponents, no `---`, a two-channel matrix (here cut short).
    static let openCVOldSample = """
        %YAML:1.0
        calibration_Time: "08/19/11 20:44:38"
        nrOfFrames: 8
        image_Width: 640
        image_Height: 480
        board_Width: 9
        board_Height: 6
        square_Size: 50.
        FixAspectRatio: 1.
        # flags:  +fix_aspectRatio +fix_principal_point +zero_tangent_dist
        flagValue: 14
        Camera_Matrix: !!opencv-matrix
           rows: 3
           cols: 3
           dt: d
           data: [ 6.5746697810243404e+002, 0., 3.1950000000000000e+002, 0.,
               6.5746697810243404e+002, 2.3950000000000000e+002, 0., 0., 1. ]
        Distortion_Coefficients: !!opencv-matrix
           rows: 5
           cols: 1
           dt: d
           data: [ -4.1802327018241026e-001, 5.0715243805833121e-001, 0., 0.,
               -5.7843596847939704e-001 ]
        Avg_Reprojection_Error: 3.8441346462381665e-001
        Image_points: !!opencv-matrix
           rows: 1
           cols: 2
           dt: "2f"
           data: [ 5.58494690e+002, 3.55650085e+002, 5.13314697e+002,
               3.59107666e+002 ]

        """

    /// Written by OpenCV 5.0.0's Python binding, byte for byte:
    ///
    ///     fs = cv2.FileStorage(path, cv2.FILE_STORAGE_WRITE)
    ///     fs.write("image_width", 1280); fs.write("image_height", 720)
    ///     fs.write("camera_matrix", np.array([[912.5, 0, 641.25], [0, 911.75, 362.5], [0, 0, 1]]))
    ///     fs.write("distortion_coefficients", np.array([[0.1021, -0.2543, 0.00051, -0.00032, 0.1187]]))
    ///     fs.write("avg_reprojection_error", 0.2317)
    static let openCVPython = """
        %YAML 1.2
        ---
        image_width: 1280
        image_height: 720
        camera_matrix: !!opencv-matrix
           rows: 3
           cols: 3
           dt: d
           data: [ 912.5, 0., 641.25, 0., 911.75, 362.5, 0., 0., 1. ]
        distortion_coefficients: !!opencv-matrix
           rows: 1
           cols: 5
           dt: d
           data: [ 0.1021, -0.25430000000000003, 0.00051000000000000004,
               -0.00032000000000000003, 0.1187 ]
        avg_reprojection_error: 0.23169999999999999

        """

    /// Written by OpenCV 5.0.0's Python binding as the sample writes a fisheye calibration
    /// (`fisheye_model: 1`, four coefficients, 4x1), byte for byte.
    static let openCVPythonFisheye = """
        %YAML 1.2
        ---
        calibration_time: "Sat 01 Mar 2025 10:00:00"
        image_width: 640
        image_height: 480
        fisheye_model: 1
        camera_matrix: !!opencv-matrix
           rows: 3
           cols: 3
           dt: d
           data: [ 285.72000000000003, 0., 319.41000000000003, 0.,
               285.93000000000001, 241.06999999999999, 0., 0., 1. ]
        distortion_coefficients: !!opencv-matrix
           rows: 4
           cols: 1
           dt: d
           data: [ -0.0112, 0.047300000000000002, -0.045100000000000001,
               0.0079000000000000008 ]

        """

    /// ROS's camera_calibration `ost.yaml`, as camera_calibration_parsers writes it.
    static let ros = """
        image_width: 640
        image_height: 480
        camera_name: narrow_stereo
        camera_matrix:
          rows: 3
          cols: 3
          data: [635.02435,   0.     , 318.62018,
                   0.     , 635.50964, 243.98123,
                   0.     ,   0.     ,   1.     ]
        distortion_model: plumb_bob
        distortion_coefficients:
          rows: 1
          cols: 5
          data: [0.101839, -0.238965, 0.001236, -0.000628, 0.000000]
        rectification_matrix:
          rows: 3
          cols: 3
          data: [1., 0., 0.,
                 0., 1., 0.,
                 0., 0., 1.]
        projection_matrix:
          rows: 3
          cols: 4
          data: [640.12311,   0.     , 318.27435,   0.     ,
                   0.     , 642.24731, 244.03357,   0.     ,
                   0.     ,   0.     ,   1.     ,   0.     ]

        """

    /// `text` with `old` replaced by `new`, where `old` must occur (a fixture's typo would
    /// otherwise test nothing).
    static func replacing(_ old: String, with new: String, in text: String) -> String {
        precondition(text.contains(old), "fixture lacks \(old)")
        return text.replacingOccurrences(of: old, with: new)
    }
}

/// Whether a message fits one line of a log or a terminal.
func isOneLine(_ message: String) -> Bool {
    !message.contains(where: \.isNewline)
}
