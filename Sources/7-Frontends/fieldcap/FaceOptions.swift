import ArgumentParser
import FieldcapFaces
import FieldcapSession

/// `--blur-faces` and its settings, as `export`, `extract` and `upload` take them.
struct FaceOptions: ParsableArguments {
    @Flag(help: "Cover every face in the cameras' frames (pixelated) before they are written.")
    var blurFaces = false

    @Option(
        help: ArgumentHelp(
            "With --blur-faces: the smallest face looked for, in pixels (36; 20 looks for smaller ones, at 2.5x the time).",
            valueName: "PX"))
    var faceMinSize: Int = 36

    @Option(
        help: ArgumentHelp(
            "With --blur-faces: look for faces in every N-th frame, carrying them between and half a second "
                + "back from where each is first found (1: each).", valueName: "N"
        ))
    var faceDetectEvery: Int = 1

    /// The settings asked for (nil without --blur-faces), or the usage error naming the option.
    func settings() throws -> FaceCover.Settings? {
        if !blurFaces && (faceMinSize != 36 || faceDetectEvery != 1) {
            throw PlanError("--face-min-size and --face-detect-every are options of --blur-faces").exitForCommand()
        }
        guard faceMinSize >= 12 else {
            throw PlanError("--face-min-size \(faceMinSize): give 12 pixels or more (36 is the default)")
                .exitForCommand()
        }
        guard faceDetectEvery >= 1 else {
            throw PlanError("--face-detect-every \(faceDetectEvery): give 1 or more").exitForCommand()
        }
        guard blurFaces else { return nil }
        var faces = FaceCover.Settings()
        faces.minFace = faceMinSize
        faces.detectEvery = faceDetectEvery
        return faces
    }
}
