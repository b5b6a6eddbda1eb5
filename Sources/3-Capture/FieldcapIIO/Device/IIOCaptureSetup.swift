import CIIO
import FieldcapCore

#if canImport(Glibc)
    import Glibc
#endif

/// Negotiates a device for buffered capture, as `IIOIMU.Options` ask: the channels, a stale buffer
/// taken back, the trigger (the one named, the one attached, or an hrtimer trigger made through
/// configfs), the rate (set, then read back), and the timestamp clock (`monotonic_raw` when it can
/// be set). What it changed is in `restore`, which puts it back; a failing step puts back what
/// the steps before it changed.
///
/// Thread-bound: setup runs on the caller's thread before capture starts.
struct IIOCaptureSetup {
    /// What setup changed on the device, to put back when capture ends (or setup fails).
    struct Restore {
        /// The trigger attached before (empty: none), when another was attached.
        var trigger: String?
        /// The configfs directory of a trigger fieldcap made.
        var createdTrigger: String?
        /// The timestamp clock before, when fieldcap set `monotonic_raw`.
        var clock: String?

        func undo(device: IIODevice) {
            let path = device.sysfsPath
            if let trigger {
                try? Sysfs.write("\(path)/trigger/current_trigger", trigger.isEmpty ? "\n" : trigger, device: device.id)
            }
            if let createdTrigger { rmdir(createdTrigger) }
            if let clock { try? Sysfs.write("\(path)/current_timestamp_clock", clock, device: device.id) }
        }
    }

    /// The scan channels recorded, in scan order, and the values they give (one per element).
    let chosen: [IIODevice.Channel]
    let values: [IIOIMU.ValueChannel]
    let timestampChannel: IIODevice.Channel?
    /// The buffer was found enabled by a recorder that died, and was taken back.
    var reclaimedStaleBuffer = false
    var trigger: String?
    /// Whether fieldcap made the trigger (an hrtimer trigger, removed afterwards).
    var triggerMade = false
    let grantedRate: Double
    /// Whether the rate was asked for (`rate=`), or is what the device or trigger ran at.
    var rateAsked = false
    /// rate= named the rate of a device or trigger that has none to set: taken as said.
    var rateDeclared = false
    let timeSource: IIOIMU.TimeSource
    /// The timestamp channel's clock, when it must be mapped into RAW.
    let mappedClock: clockid_t?
    var restore = Restore()

    init(device: IIODevice, label: String, options: IIOIMU.Options) throws(IIOError) {
        let scan = device.scanChannels
        // Channels.
        var chosen: [IIODevice.Channel]
        if let wanted = options.channels {
            chosen = []
            for want in wanted {
                let matches = scan.filter { $0.id == want || ($0.kind.rawValue == want && $0.id != "timestamp") }
                guard !matches.isEmpty else {
                    throw IIOError(
                        code: .notFound, device: label, operation: "channel '\(want)'",
                        hint:
                            "no such channel; it has "
                            + "\(scan.map(\.id).filter { $0 != "timestamp" }.joined(separator: ", "))"
                    )
                }
                chosen += matches.filter { match in !chosen.contains { $0.id == match.id } }
            }
        } else {
            chosen = scan.filter { $0.kind.isIMUChannel }
            guard !chosen.isEmpty else {
                throw IIOError(
                    code: .notFound, device: label, operation: "choose channels",
                    hint:
                        "no accel, anglvel, magn or temp channel; pick from "
                        + "\(scan.map(\.id).filter { $0 != "timestamp" }.joined(separator: ", ")) with channels=A+B"
                )
            }
        }
        chosen.sort { $0.index < $1.index }
        for channel in chosen where channel.format == nil {
            throw IIOError(
                code: .unsupported, device: label, operation: "channel '\(channel.id)'",
                hint: "its scan format is not one fieldcap decodes (whole bytes of 8 to 64 bits)")
        }
        var values: [IIOIMU.ValueChannel] = []
        for channel in chosen {
            let format = channel.format!
            for element in 0..<format.repeatCount {
                values.append(
                    IIOIMU.ValueChannel(
                        name: format.repeatCount > 1 ? "\(channel.id)_\(element)" : channel.id,
                        kernelChannel: channel.id,
                        unit: channel.kind.unit, scale: channel.scale, offset: channel.offset,
                        format: format.description))
            }
        }
        guard values.count <= CaptureRecord.valueCapacity else {
            throw IIOError(
                code: .unsupported, device: label, operation: "choose channels",
                hint:
                    "\(values.count) values per sample; at most "
                    + "\(CaptureRecord.valueCapacity): choose fewer with channels=A+B"
            )
        }
        self.chosen = chosen
        self.values = values
        timestampChannel = scan.first { $0.id == "timestamp" && $0.format?.storageBits == 64 }

        // trigger= naming what is not there, or given to a device that takes none, is bad input
        // refused before anything on the device changes, as the channels are. (A rate is refused
        // later: the trigger's or the device's sampling_frequency says what it can run at.)
        if let wanted = options.trigger {
            guard device.takesTrigger else {
                throw IIOError(
                    code: .unsupported, device: label, operation: "trigger '\(wanted)'",
                    hint: "this device takes no trigger; drop trigger=")
            }
            let present = IIODevice.triggers()
            guard present.contains(where: { $0.name == wanted }) else {
                throw IIOError(
                    code: .notFound, device: label, operation: "trigger '\(wanted)'",
                    hint: present.isEmpty
                        ? "no triggers are present"
                        : "no such trigger; present: \(present.map(\.name).joined(separator: ", "))")
            }
        }

        if Sysfs.read("\(device.sysfsPath)/buffer/enable") == "1" {
            // Enabled: either another program is reading it (then its character device, which the
            // kernel lets one process open at a time, is busy) or a recorder died with it enabled
            // (SIGKILL, a crash), which leaves it enabled with nobody reading: take it back.
            let fd = open("/dev/\(device.id)", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                throw errno == EBUSY
                    ? IIOError(
                        code: .busy, device: label, operation: "buffered capture", errno: EBUSY,
                        hint: "its buffer is already enabled: another program is capturing from it")
                    : IIOError.system("open /dev/\(device.id)", device: label, errno: errno)
            }
            close(fd)
            try Sysfs.write("\(device.sysfsPath)/buffer/enable", "0", device: label)
            reclaimedStaleBuffer = true
        }

        // What setup changes is put back if a later step fails (and when capture ends).
        do throws(IIOError) {
            // Trigger, then rate (an hrtimer trigger's rate is the trigger's own).
            var triggerName: String?
            if device.takesTrigger {
                if let wanted = options.trigger {
                    triggerName = wanted
                } else if let current = device.currentTrigger {
                    triggerName = current
                } else {
                    triggerName = try Self.createHrtimerTrigger(for: device, label: label)
                    restore.createdTrigger = "/sys/kernel/config/iio/triggers/hrtimer/\(triggerName!)"
                    triggerMade = true
                }
                if triggerName != device.currentTrigger {
                    restore.trigger = device.currentTrigger ?? ""
                    try Sysfs.write("\(device.sysfsPath)/trigger/current_trigger", triggerName!, device: label)
                }
            }
            trigger = triggerName
            let triggerPath = triggerName.flatMap { name in IIODevice.triggers().first { $0.name == name } }
                .map { "/sys/bus/iio/devices/\($0.id)" }
            let rateAttribute = [triggerPath, device.sysfsPath].compactMap { $0 }
                .map { "\($0)/sampling_frequency" }.first(where: Sysfs.exists)
            // Neither the device nor its trigger has a sampling_frequency (a sysfs trigger, one
            // fired by another program or an interrupt): rate= is the rate it runs at, as said.
            let declaredRate = rateAttribute == nil ? options.rate : nil
            if let rate = options.rate, let rateAttribute {
                let available = device.samplingFrequenciesAvailable
                if rateAttribute.hasPrefix(device.sysfsPath), !available.isEmpty,
                    !available.contains(where: { abs($0 - rate) < 1e-6 })
                {
                    throw IIOError(
                        code: .unsupported, device: label, operation: "set rate \(rate) Hz",
                        hint: "the device offers \(available.map { "\($0)" }.joined(separator: ", ")) Hz")
                }
                do {
                    try Sysfs.write(rateAttribute, String(rate), device: label)
                } catch  where error.errno == EINVAL {
                    throw IIOError(
                        code: .unsupported, device: label, operation: "set rate \(rate) Hz", errno: EINVAL,
                        hint: "\(rateAttribute) refused it")
                }
            }
            guard let granted = declaredRate ?? rateAttribute.flatMap(Sysfs.read).flatMap(Double.init), granted > 0
            else {
                throw IIOError(
                    code: .unsupported, device: label, operation: "read the sampling rate",
                    hint: "no sampling_frequency to read: give the rate the device runs at with rate=HZ")
            }
            if let rate = options.rate, abs(granted - rate) > 0.01 * rate {
                throw IIOError(
                    code: .unsupported, device: label, operation: "set rate \(rate) Hz",
                    hint: "the device granted \(granted) Hz; ask for that, or a rate it offers")
            }
            grantedRate = options.rate.map { abs(granted - $0) < 1e-9 ? $0 : granted } ?? granted
            rateAsked = options.rate != nil
            rateDeclared = declaredRate != nil

            // Timestamps: straight into MONOTONIC_RAW when the device lets us choose its clock (a
            // device that came back: the clock it had before it went).
            if timestampChannel != nil {
                let before = device.timestampClock
                let wanted = options.timestampClock ?? (options.keepTimestampClock ? nil : "monotonic_raw")
                if let before, let wanted, before != wanted {
                    try Sysfs.write("\(device.sysfsPath)/current_timestamp_clock", wanted, device: label)
                    restore.clock = before
                }
                let clock = device.timestampClock ?? "realtime"
                guard let clockId = IIODevice.clockId(named: clock) else {
                    throw IIOError(
                        code: .unsupported, device: label, operation: "timestamp clock '\(clock)'",
                        hint: "not a clock fieldcap can map; drop clock=keep so fieldcap sets monotonic_raw")
                }
                timeSource = clock == "monotonic_raw" ? .kernelRaw : .kernelMapped(clock: clock)
                mappedClock = clock == "monotonic_raw" ? nil : clockId
            } else {
                timeSource = .extrapolated
                mappedClock = nil
            }
        } catch {
            restore.undo(device: device)
            throw error
        }
    }

    /// Makes an hrtimer trigger through configfs for `device` and returns its name.
    static func createHrtimerTrigger(for device: IIODevice, label: String) throws(IIOError) -> String {
        try createHrtimerTrigger(named: "fieldcap-\(device.id.replacingColon())", label: label)
    }

    /// Makes the hrtimer trigger `name` through configfs (or finds it made) and waits for it to
    /// appear in sysfs; returns `name`.
    static func createHrtimerTrigger(named name: String, label: String) throws(IIOError) -> String {
        let root = "/sys/kernel/config/iio/triggers/hrtimer"
        guard Sysfs.exists(root) else {
            throw IIOError(
                code: .unsupported, device: label, operation: "attach a trigger",
                hint:
                    "none is attached and hrtimer triggers are unavailable (modprobe iio-trig-hrtimer; "
                    + "mount configfs at /sys/kernel/config); or name one with trigger=NAME"
            )
        }
        if mkdir("\(root)/\(name)", 0o755) != 0 && errno != EEXIST {
            throw IIOError.system("create hrtimer trigger \(root)/\(name)", device: label, errno: errno)
        }
        // The trigger's sysfs node appears as the directory is made; wait for it briefly.
        for _ in 0..<100 {
            if let trigger = IIODevice.triggers().first(where: { $0.name == name }) {
                // Unprivileged, the trigger's rate becomes ours to write when udev has run the
                // project's rule for the new trigger: wait for that (up to 2 s) rather than fail.
                let rate = "/sys/bus/iio/devices/\(trigger.id)/sampling_frequency"
                for _ in 0..<200 where access(rate, W_OK) != 0 && Sysfs.exists(rate) { usleep(10_000) }
                return name
            }
            usleep(10_000)
        }
        throw IIOError(
            code: .other, device: label, operation: "create hrtimer trigger \(name)", hint: "it did not appear in sysfs"
        )
    }

}
