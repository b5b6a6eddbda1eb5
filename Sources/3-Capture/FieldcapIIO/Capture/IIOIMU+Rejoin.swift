import CIIO
import FieldcapCore
import SyncField

extension IIOIMU {
    /// The device went away: let its buffer go (which closes its character device, so that the
    /// driver can free it and make it again), wait for the same device, and set it up with the
    /// channels, scan layout, rate, trigger and timestamp clock it had. False when stopped while
    /// away.
    ///
    /// - Throws: `DeviceError` when the device came back and cannot be taken up as it was.
    func takeUpAgain(_ policy: RejoinPolicy, presence: StreamPresence, stop: StopSignal) throws -> Bool {
        releaseBuffer()
        while let node = policy.waitForDevice(stop, { presence.note($0) }) {
            do throws(IIOError) {
                let found = try IIODevice(node)
                try setUp(found, as: node)
            } catch {
                // Listed in sysfs but gone again (or not yet in libiio's look at sysfs) before it
                // could be set up: wait on, without spinning on a node that stays listed.
                if error.code == .gone || (error.code == .notFound && error.operation == "find the IIO device") {
                    if stop.wait(milliseconds: 50) { return false }
                    continue
                }
                presence.refused(as: node, reason: error.hint.isEmpty ? "\(error)" : error.hint)
                throw error
            }
            presence.returned(atNs: MonotonicClock.now(), as: node)
            return true
        }
        return false
    }

    /// Sets up `found`, the device back as `node`, as the stream had it, and enables its buffer;
    /// refuses it, saying why, when it no longer offers the channels, layout or rate.
    private func setUp(_ found: IIODevice, as node: String) throws(IIOError) {
        let label = "\(descriptor.device) (\(found.id))"
        func refuse(_ what: String) -> IIOError {
            IIOError(code: .unsupported, device: label, operation: "rejoin", hint: "\(what): not taken up again")
        }
        guard found.name == device.name else {
            throw refuse("another device came back as \(node): \(found.name), not \(device.name)")
        }
        guard found.hasBuffer else { throw refuse("it came back without a buffer") }
        // The same scan layout: the records' values keep their meaning only with the same
        // channels, formats, order and units.
        let offered = found.scanChannels
        for channel in selected + (timestampChannel.map { [$0] } ?? []) {
            guard let now = offered.first(where: { $0.id == channel.id }) else {
                throw refuse(
                    "it came back without channel \(channel.id) (it offers "
                        + "\(offered.map(\.id).joined(separator: ", ")))")
            }
            guard now.format == channel.format, now.index == channel.index else {
                throw refuse(
                    "it came back with \(channel.id) as \(Self.spell(now.format)) at scan index \(now.index), "
                        + "not \(Self.spell(channel.format)) at \(channel.index)")
            }
            guard now.scale == channel.scale, now.offset == channel.offset else {
                throw refuse(
                    "it came back with \(channel.id) at scale \(now.scale) and offset \(now.offset), "
                        + "not \(channel.scale) and \(channel.offset)")
            }
        }
        // An hrtimer trigger fieldcap made lives in configfs, apart from the device: it is
        // normally still there. One removed meanwhile is made again under its name.
        if triggerMade, let trigger, !IIODevice.triggers().contains(where: { $0.name == trigger }) {
            _ = try IIOCaptureSetup.createHrtimerTrigger(named: trigger, label: label)
        }
        // The rate is written again only when fieldcap wrote it: a trigger found attached runs at
        // its owner's rate, which must still be the stream's.
        var options = Options(
            rate: rateAsked ? grantedRate : nil, channels: selected.map(\.id), trigger: trigger,
            keepTimestampClock: true)
        switch timeSource {
        case .kernelRaw: options.timestampClock = "monotonic_raw"
        case .kernelMapped(let clock): options.timestampClock = clock
        case .extrapolated: break
        }
        let setup = try IIOCaptureSetup(device: found, label: label, options: options)
        var refusal: IIOError?
        if setup.timeSource != timeSource {
            refusal = refuse(
                "its timestamps came back as \(Self.sidecarTimeSource(setup.timeSource)), "
                    + "not \(Self.sidecarTimeSource(timeSource))")
        } else if abs(setup.grantedRate - grantedRate) > 0.01 * grantedRate {
            refusal = refuse(
                "it came back at \(SourceReport.rate(setup.grantedRate)) Hz, not \(SourceReport.rate(grantedRate))")
        }
        if let refusal {
            setup.restore.undo(device: found)
            throw refusal
        }
        let was = (device, selected, timestampChannel)
        (device, selected, timestampChannel) = (found, setup.chosen, setup.timestampChannel)
        do {
            buffer = try enableBuffer(label: label)
        } catch {
            setup.restore.undo(device: found)
            (device, selected, timestampChannel) = was
            throw error
        }
        // What to put back at the end is now what this device had; a trigger fieldcap made is
        // still removed then.
        restoreSetup.trigger = setup.restore.trigger
        restoreSetup.clock = setup.restore.clock
    }

    private static func spell(_ format: IIOScanFormat?) -> String { format.map { "\($0)" } ?? "an undecodable format" }
}
