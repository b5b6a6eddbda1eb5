import CV4L2
import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

extension V4L2Device {
    /// A camera control (exposure, gain, focus, white balance, auto modes...).
    public struct Control: Sendable, Equatable, CustomStringConvertible {
        public var id: UInt32
        /// The driver's name made into an identifier as v4l2-ctl does: `Exposure, Auto` →
        /// `exposure_auto`.
        public var name: String
        public var minimum: Int64
        public var maximum: Int64
        public var step: Int64
        public var defaultValue: Int64
        public var isSettable: Bool

        public var description: String {
            "\(name) (\(minimum)...\(maximum)" + (step > 1 ? ", step \(step)" : "") + ", default \(defaultValue))"
                + (isSettable ? "" : " read-only")
        }
    }

    static func controlName(_ label: String) -> String {
        var name = ""
        var pendingUnderscore = false
        for character in label.lowercased() {
            if character.isLetter || character.isNumber {
                if pendingUnderscore && !name.isEmpty { name.append("_") }
                pendingUnderscore = false
                name.append(character)
            } else {
                pendingUnderscore = true
            }
        }
        return name
    }

    /// The integer, boolean and menu controls (`VIDIOC_QUERYCTRL` with `V4L2_CTRL_FLAG_NEXT_CTRL`).
    public func controls() -> [Control] {
        var controls: [Control] = []
        var query = v4l2_queryctrl()
        query.id = CV4L2_CTRL_FLAG_NEXT_CTRL()
        while succeeds(CV4L2_VIDIOC_QUERYCTRL(), &query) {
            let type = query.type
            let simple =
                type == V4L2_CTRL_TYPE_INTEGER.rawValue || type == V4L2_CTRL_TYPE_BOOLEAN.rawValue
                || type == V4L2_CTRL_TYPE_MENU.rawValue || type == V4L2_CTRL_TYPE_INTEGER_MENU.rawValue
            if simple && query.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) == 0 {
                controls.append(
                    Control(
                        id: query.id, name: Self.controlName(Self.string(query.name)), minimum: Int64(query.minimum),
                        maximum: Int64(query.maximum), step: Int64(query.step),
                        defaultValue: Int64(query.default_value),
                        isSettable: query.flags & UInt32(V4L2_CTRL_FLAG_READ_ONLY | V4L2_CTRL_FLAG_GRABBED) == 0))
            }
            query.id |= CV4L2_CTRL_FLAG_NEXT_CTRL()
        }
        return controls
    }

    /// Sets the control called `name` (as `controls()` names it) and returns the value the
    /// driver then reports.
    public func setControl(_ name: String, to value: Int64) throws(V4L2Error) -> Int64 {
        let available = controls()
        guard let control = available.first(where: { $0.name == name }) else {
            throw V4L2Error(
                code: .other, device: path, operation: "VIDIOC_S_CTRL", errno: 0,
                hint: "no control '\(name)'; it has \(available.map(\.name).joined(separator: ", "))")
        }
        guard control.isSettable else {
            throw V4L2Error(
                code: .other, device: path, operation: "VIDIOC_S_CTRL", errno: 0, hint: "'\(name)' is read-only")
        }
        guard (control.minimum...control.maximum).contains(value) else {
            throw V4L2Error(
                code: .other, device: path, operation: "VIDIOC_S_CTRL", errno: 0,
                hint: "\(name)=\(value) is outside \(control.minimum)...\(control.maximum)")
        }
        var setting = v4l2_control(id: control.id, value: Int32(value))
        try call("VIDIOC_S_CTRL \(name)", CV4L2_VIDIOC_S_CTRL(), &setting)
        var reading = v4l2_control(id: control.id, value: 0)
        try call("VIDIOC_G_CTRL \(name)", CV4L2_VIDIOC_G_CTRL(), &reading)
        return Int64(reading.value)
    }

    /// The id of the control called `name`, for `readControl`; nil when the camera has none.
    public func controlID(_ name: String) -> UInt32? { controls().first(where: { $0.name == name })?.id }

    /// The control's value now (`VIDIOC_G_CTRL`), or the errno. A UVC camera answers over USB:
    /// milliseconds, more from a camera in trouble, so never on a capture thread.
    public func readControl(_ id: UInt32) -> Result<Int64, Errno> {
        var reading = v4l2_control(id: id, value: 0)
        if let error = node.ioctl(CV4L2_VIDIOC_G_CTRL(), &reading) { return .failure(error) }
        return .success(Int64(reading.value))
    }

    /// The value of the control called `name` (`VIDIOC_G_CTRL`); nil when the camera has no
    /// such control or will not say.
    public func controlValue(_ name: String) -> Int64? {
        guard let control = controls().first(where: { $0.name == name }) else { return nil }
        var reading = v4l2_control(id: control.id, value: 0)
        guard succeeds(CV4L2_VIDIOC_G_CTRL(), &reading) else { return nil }
        return Int64(reading.value)
    }
}
