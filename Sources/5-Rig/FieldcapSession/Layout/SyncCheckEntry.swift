import FieldcapCore
import FoundationEssentials
import SyncField

/// `sync_check` in a session's `fieldcap.json`: the camera–IMU offsets `fieldcap check-sync
/// --save` (or `serve --check-sync`, after a recording) measured in it, each pair with both
/// methods' answers. Read back from a sidecar that may be damaged or hostile (`init(json:)`
/// refuses anything fieldcap would not have written, naming where), so `validate`, the API and
/// the web page can trust what they show.
public struct SyncCheckEntry: Sendable, Equatable {
    /// One method's offset, as `check-sync` measured it.
    public struct Estimate: Sendable, Equatable {
        /// How much later the camera's stamps are than the IMU's for the same instant.
        public var offsetNs: Int64
        /// Kalibr's `timeshift_cam_imu` (seconds): the offset's negative.
        public var timeshiftCamIMU: Double
        public var correlation: Double
        public var sharpness: Double
        public var rivalCorrelation: Double
        public var confidence: Double
        public var gyroRMSRadS: Double
        public var turnScale: Double
        public var framePairs: Int
        public var excludedPairs: Int
        public var framePeriodNs: Int64

        public init(
            offsetNs: Int64, timeshiftCamIMU: Double, correlation: Double, sharpness: Double,
            rivalCorrelation: Double, confidence: Double, gyroRMSRadS: Double, turnScale: Double, framePairs: Int,
            excludedPairs: Int, framePeriodNs: Int64
        ) {
            self.offsetNs = offsetNs
            self.timeshiftCamIMU = timeshiftCamIMU
            self.correlation = correlation
            self.sharpness = sharpness
            self.rivalCorrelation = rivalCorrelation
            self.confidence = confidence
            self.gyroRMSRadS = gyroRMSRadS
            self.turnScale = turnScale
            self.framePairs = framePairs
            self.excludedPairs = excludedPairs
            self.framePeriodNs = framePeriodNs
        }
    }

    /// A method's answer: an offset, or why there is none.
    public enum Outcome: Sendable, Equatable {
        case estimate(Estimate)
        /// `reason`: a word scripts can test (`still`, `no_match`, ...); `message`: what to do.
        case refused(reason: String, message: String)

        public var estimate: Estimate? {
            if case .estimate(let estimate) = self { return estimate }
            return nil
        }
    }

    public struct Pair: Sendable, Equatable {
        public var camera: String
        public var imu: String
        /// Image alignment: the answer to trust.
        public var imageAlignment: Outcome
        /// The peer method (image-difference energy), for comparison.
        public var differenceEnergy: Outcome
        /// The focal length came from the session's intrinsics.
        public var intrinsics: Bool
        /// The median `uncertainty_ns` of the camera's frames, when they claim one.
        public var frameUncertaintyNs: Int64?
        public var skippedFrames: Int
        public var missingGyroAxes: [String]
        public var exceedsFrameUncertainty: Bool
        public var calibrationTimeshiftCamIMU: Double?

        public init(
            camera: String, imu: String, imageAlignment: Outcome, differenceEnergy: Outcome, intrinsics: Bool,
            frameUncertaintyNs: Int64?, skippedFrames: Int, missingGyroAxes: [String],
            exceedsFrameUncertainty: Bool, calibrationTimeshiftCamIMU: Double?
        ) {
            self.camera = camera
            self.imu = imu
            self.imageAlignment = imageAlignment
            self.differenceEnergy = differenceEnergy
            self.intrinsics = intrinsics
            self.frameUncertaintyNs = frameUncertaintyNs
            self.skippedFrames = skippedFrames
            self.missingGyroAxes = missingGyroAxes
            self.exceedsFrameUncertainty = exceedsFrameUncertainty
            self.calibrationTimeshiftCamIMU = calibrationTimeshiftCamIMU
        }
    }

    /// The member's name in `fieldcap.json`.
    public static let member = "sync_check"
    /// How the stretch analysed was chosen: `whole`, `most_excited` (by `windowIMU`) or `given`.
    public static let windowChoices: Set<String> = ["whole", "most_excited", "given"]

    /// When the check ran (UTC, as the sidecar spells times).
    public var checkedUtc: String
    /// The stretch analysed, in seconds from the session's sync point.
    public var window: ClosedRange<Double>
    public var windowChoice: String
    /// The IMU whose turning chose the stretch (`most_excited`).
    public var windowIMU: String?
    public var pairs: [Pair]

    public init(
        checkedUtc: String, window: ClosedRange<Double>, windowChoice: String, windowIMU: String?, pairs: [Pair]
    ) {
        self.checkedUtc = checkedUtc
        self.window = window
        self.windowChoice = windowChoice
        self.windowIMU = windowIMU
        self.pairs = pairs
    }

    /// Every pair has an offset by image alignment.
    public var allMeasured: Bool { pairs.allSatisfy { $0.imageAlignment.estimate != nil } }

    public var json: JSONValue {
        func outcome(_ outcome: Outcome) -> JSONValue {
            switch outcome {
            case .refused(let reason, let message): return ["refused": .string(reason), "message": .string(message)]
            case .estimate(let estimate):
                return [
                    "offset_ns": JSONValue(estimate.offsetNs), "timeshift_cam_imu": JSONValue(estimate.timeshiftCamIMU),
                    "correlation": JSONValue(estimate.correlation), "sharpness": JSONValue(estimate.sharpness),
                    "rival_correlation": JSONValue(estimate.rivalCorrelation),
                    "confidence": JSONValue(estimate.confidence), "gyro_rms_rad_s": JSONValue(estimate.gyroRMSRadS),
                    "turn_scale": JSONValue(estimate.turnScale), "frame_pairs": JSONValue(estimate.framePairs),
                    "excluded_pairs": JSONValue(estimate.excludedPairs),
                    "frame_period_ns": JSONValue(estimate.framePeriodNs),
                ]
            }
        }
        let pairs: [JSONValue] = self.pairs.map { pair in
            [
                "camera": .string(pair.camera), "imu": .string(pair.imu),
                "image_alignment": outcome(pair.imageAlignment),
                "difference_energy": outcome(pair.differenceEnergy), "intrinsics": JSONValue(pair.intrinsics),
                "frame_uncertainty_ns": pair.frameUncertaintyNs.map { JSONValue($0) } ?? .null,
                "skipped_frames": JSONValue(pair.skippedFrames),
                "missing_gyro_axes": .array(pair.missingGyroAxes.map { .string($0) }),
                "exceeds_frame_uncertainty": JSONValue(pair.exceedsFrameUncertainty),
                "calibration_timeshift_cam_imu": pair.calibrationTimeshiftCamIMU.map { JSONValue($0) } ?? .null,
            ]
        }
        var entry: [String: JSONValue] = [
            "checked_utc": .string(checkedUtc),
            "window_s": [JSONValue(window.lowerBound), JSONValue(window.upperBound)],
            "window": .string(windowChoice), "pairs": .array(pairs),
        ]
        if let windowIMU { entry["window_imu"] = .string(windowIMU) }
        return .object(entry)
    }

    /// What is wrong with a `sync_check` member, named by its path in the sidecar.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Reads the member back. `streams`, when given, are the session's stream ids: a pair must
    /// name two of them.
    public init(json: JSONValue, streams: Set<String>? = nil) throws(Problem) {
        let reader = Reader(path: Self.member)
        let entry = try reader.object(json)
        checkedUtc = try reader.text(entry, "checked_utc")
        guard checkedUtc.utf8.count <= 40, checkedUtc.hasSuffix("Z") else {
            throw reader.problem("checked_utc", "must be a UTC time like 2024-03-08T09:28:21.123Z")
        }
        let bounds = try reader.numbers(entry, "window_s")
        guard bounds.count == 2, bounds[0] <= bounds[1] else {
            throw reader.problem("window_s", "must be [from, to] in seconds from the sync point, from ≤ to")
        }
        window = bounds[0]...bounds[1]
        windowChoice = try reader.text(entry, "window")
        guard Self.windowChoices.contains(windowChoice) else {
            throw reader.problem("window", "must be one of \(Self.windowChoices.sorted().joined(separator: ", "))")
        }
        windowIMU = try reader.optionalText(entry, "window_imu")
        guard let values = entry["pairs"]?.arrayValue else { throw reader.problem("pairs", "must be an array") }
        var pairs: [Pair] = []
        for (index, value) in values.enumerated() {
            var reader = Reader(path: "\(Self.member).pairs[\(index)]")
            pairs.append(try reader.pair(value, streams: streams))
        }
        self.pairs = pairs
    }

    /// Reads JSON values with problems that name their place in the sidecar.
    private struct Reader {
        var path: String

        func problem(_ key: String, _ what: String) -> Problem { Problem(description: "\(path).\(key) \(what)") }

        func object(_ value: JSONValue) throws(Problem) -> [String: JSONValue] {
            guard let object = value.objectValue else { throw Problem(description: "\(path) must be an object") }
            return object
        }

        func text(_ object: [String: JSONValue], _ key: String) throws(Problem) -> String {
            guard let text = object[key]?.stringValue else { throw problem(key, "must be text") }
            return text
        }

        func optionalText(_ object: [String: JSONValue], _ key: String) throws(Problem) -> String? {
            guard let value = object[key], !value.isNull else { return nil }
            guard let text = value.stringValue else { throw problem(key, "must be text or absent") }
            return text
        }

        func number(_ object: [String: JSONValue], _ key: String) throws(Problem) -> Double {
            guard let number = object[key]?.doubleValue, number.isFinite else { throw problem(key, "must be a number") }
            return number
        }

        func optionalNumber(_ object: [String: JSONValue], _ key: String) throws(Problem) -> Double? {
            guard let value = object[key], !value.isNull else { return nil }
            guard let number = value.doubleValue, number.isFinite else {
                throw problem(key, "must be a number or null")
            }
            return number
        }

        func count(_ object: [String: JSONValue], _ key: String) throws(Problem) -> Int {
            guard let count = object[key]?.intValue, count >= 0 else {
                throw problem(key, "must be a whole number, 0 or more")
            }
            return count
        }

        func nanoseconds(_ object: [String: JSONValue], _ key: String) throws(Problem) -> Int64 {
            guard let value = object[key]?.intValue else { throw problem(key, "must be a whole number of ns") }
            return Int64(value)
        }

        func flag(_ object: [String: JSONValue], _ key: String) throws(Problem) -> Bool {
            guard let flag = object[key]?.boolValue else { throw problem(key, "must be true or false") }
            return flag
        }

        func numbers(_ object: [String: JSONValue], _ key: String) throws(Problem) -> [Double] {
            guard let numbers = object[key]?.arrayValue(of: { $0.doubleValue }), numbers.allSatisfy(\.isFinite)
            else { throw problem(key, "must be an array of numbers") }
            return numbers
        }

        mutating func pair(_ value: JSONValue, streams: Set<String>?) throws(Problem) -> Pair {
            let pair = try object(value)
            let camera = try text(pair, "camera")
            let imu = try text(pair, "imu")
            if let streams {
                for (key, id) in [("camera", camera), ("imu", imu)] where !streams.contains(id) {
                    throw problem(key, "\(String(reflecting: id)) is not a stream of the session")
                }
            }
            path += " (\(camera)–\(imu))"
            var frameUncertaintyNs: Int64?
            if let value = pair["frame_uncertainty_ns"], !value.isNull {
                guard let ns = value.intValue, ns >= 0 else {
                    throw problem("frame_uncertainty_ns", "must be a whole number of ns, 0 or more, or null")
                }
                frameUncertaintyNs = Int64(ns)
            }
            guard let axes = pair["missing_gyro_axes"]?.arrayValue(of: \.stringValue),
                axes.allSatisfy({ ["x", "y", "z"].contains($0) })
            else { throw problem("missing_gyro_axes", "must be an array of x, y and z") }
            return Pair(
                camera: camera, imu: imu, imageAlignment: try outcome(pair, "image_alignment"),
                differenceEnergy: try outcome(pair, "difference_energy"), intrinsics: try flag(pair, "intrinsics"),
                frameUncertaintyNs: frameUncertaintyNs, skippedFrames: try count(pair, "skipped_frames"),
                missingGyroAxes: axes, exceedsFrameUncertainty: try flag(pair, "exceeds_frame_uncertainty"),
                calibrationTimeshiftCamIMU: try optionalNumber(pair, "calibration_timeshift_cam_imu"))
        }

        func outcome(_ pair: [String: JSONValue], _ key: String) throws(Problem) -> Outcome {
            guard let value = pair[key]?.objectValue else { throw problem(key, "must be an object") }
            let inner = Reader(path: "\(path).\(key)")
            if value["refused"] != nil {
                return .refused(reason: try inner.text(value, "refused"), message: try inner.text(value, "message"))
            }
            let estimate = Estimate(
                offsetNs: try inner.nanoseconds(value, "offset_ns"),
                timeshiftCamIMU: try inner.number(value, "timeshift_cam_imu"),
                correlation: try inner.number(value, "correlation"), sharpness: try inner.number(value, "sharpness"),
                rivalCorrelation: try inner.number(value, "rival_correlation"),
                confidence: try inner.number(value, "confidence"),
                gyroRMSRadS: try inner.number(value, "gyro_rms_rad_s"),
                turnScale: try inner.number(value, "turn_scale"), framePairs: try inner.count(value, "frame_pairs"),
                excludedPairs: try inner.count(value, "excluded_pairs"),
                framePeriodNs: try inner.nanoseconds(value, "frame_period_ns"))
            guard estimate.framePeriodNs > 0 else {
                throw inner.problem("frame_period_ns", "must be above 0")
            }
            return .estimate(estimate)
        }
    }
}

extension Sidecar {
    /// Puts `entry` into the session's `fieldcap.json` as `sync_check` (replacing an earlier
    /// one), every other member as it was: written whole and atomically, so a crash leaves the
    /// old sidecar or the new one. Refuses a session whose sidecar cannot be read.
    public static func storeSyncCheck(_ entry: SyncCheckEntry, layout: SessionLayout) throws {
        guard var contents = Contents(layout: layout) else {
            throw SidecarUnreadable(path: layout.sidecar)
        }
        contents.document[SyncCheckEntry.member] = entry.json
        try store(contents.document, layout: layout)
    }

    /// A sidecar that is not there or is not fieldcap's.
    public struct SidecarUnreadable: Error, CustomStringConvertible {
        public var path: String
        public var description: String { "\(path) cannot be read as fieldcap's sidecar: nothing saved" }
    }
}
