import ArgumentParser
import FieldcapBench
import FieldcapCore
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import Glibc
import SyncField
import Synchronization

struct Jitter: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jitter",
        abstract: "Capture without writing media and report how each stream's timestamps behave.",
        discussion: """
            Captures from the --cam and --imu devices (same SPEC syntax as recording)
            through the same capture threads, rings and stamping as a recording, but
            writes no media: each record is measured and its buffer handed straight back.
            Per stream it reports:

              interval error   each interval minus the nominal period, for the dequeue
                               times (CLOCK_MONOTONIC_RAW read right after the dequeue)
                               and for capture_ns (the kernel's own timestamp mapped into
                               RAW, where the device has one); min and max signed,
                               median/p99/p99.9 of the absolute error, from an
                               HdrHistogram
              dequeue latency  dequeue time minus capture_ns: how late fieldcap saw each
                               record
              drops            lost in the ring or skipped by the device
              clock mapping    the clock pair's bracket width, the measured drift (ppm),
                               the rate changes seen (NTP updates), and the widest
                               uncertainty handed out and when
              CPU              fieldcap's CPU time as a share of one core

            A table goes to stdout; --report DIR gets jitter.json and jitter.svg
            (interval-error histograms and time series, one panel per stream). --load N
            runs N busy threads alongside, to see the timestamps under CPU pressure.
            """)

    @OptionGroup var devices: DeviceArguments

    @Option(help: ArgumentHelp("How long to measure: 30s, 2m.", valueName: "DURATION"))
    var duration: Duration = Duration(argument: "30s")!

    @Option(help: ArgumentHelp("Busy threads to run alongside (CPU pressure).", valueName: "N"))
    var load: Int = 0

    @Option(help: ArgumentHelp("A directory for jitter.json and jitter.svg (made if missing).", valueName: "DIR"))
    var report: String?

    func validate() throws {
        try DevicePlan(specs: devices.specs).validateForCommand(verb: "measure")
        guard (0...256).contains(load) else { throw ValidationError("--load \(load) must be 0 to 256 busy threads") }
        if let report {
            var isDirectory = false
            if FileManager.default.fileExists(atPath: report, isDirectory: &isDirectory), !isDirectory {
                throw ValidationError("--report \(report) is a file; give a directory")
            }
        }
    }

    func run() throws {
        let sources = try DevicePlan(specs: devices.specs).makeSourcesForCommand()
        let signals = SignalWaiter(signals: [SIGINT, SIGTERM])
        let busy = BusyLoad(threads: load)
        defer { busy.stop() }
        let sink = JitterSink()
        // The writers paced as in a recording, so the CPU and timing measured are a recording's.
        var options = Recorder.Options()
        options.idlePollNs = 100_000_000
        let recorder = Recorder(sources: sources, sink: sink, options: options)
        let cpuBefore = Self.processCPUSeconds()
        let started = MonotonicClock.now()
        try recorder.start()
        say(
            "measuring \(sources.map(\.descriptor.id).joined(separator: ", ")) for "
                + "\(duration.seconds) s\(load > 0 ? " with \(load) busy threads" : "")..."
        )
        while true {
            let elapsed = Double(MonotonicClock.now() - started) / 1e9
            if elapsed >= duration.seconds { break }
            if signals.wait(seconds: min(0.5, max(0.001, duration.seconds - elapsed))) != nil { break }
        }
        let summary = try recorder.stop()
        let elapsed = Double(MonotonicClock.now() - started) / 1e9
        busy.stop()  // first: its threads' CPU is then counted in both numbers below
        let cpu = Self.processCPUSeconds() - cpuBefore

        let result = JitterReport(
            streams: zip(zip(sources, sink.streams), summary).map { pair, stream in
                JitterReport.Stream(source: pair.0, jitter: pair.1, summary: stream)
            },
            startedNs: started, seconds: elapsed, cpuSeconds: cpu, busyCPUSeconds: busy.cpuSeconds, load: load)
        print(result.table())
        if let report {
            try FileManager.default.createDirectory(atPath: report, withIntermediateDirectories: true)
            try Data(result.json()).write(to: URL(fileURLWithPath: "\(report)/jitter.json"))
            try Data(result.svg().utf8).write(to: URL(fileURLWithPath: "\(report)/jitter.svg"))
            say("wrote \(report)/jitter.json and \(report)/jitter.svg")
        }
        if summary.contains(where: { $0.captureError != nil }) { throw ExitCode(3) }
    }

    /// User + system CPU of this process so far, busy threads included (subtracted by the caller).
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
            usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// Threads that spin until stopped, to put the CPU under pressure; their own CPU time is
/// measured so the report can leave it out of fieldcap's.
///
/// Threading: `running` and `spent` are atomics the spinning threads share; `threads` and
/// `stopped` belong to the thread that made it, which alone calls `stop()`.
final class BusyLoad: @unchecked Sendable {
    private let running = Atomic<Bool>(true)
    private let spent = Atomic<Int>(0)  // microseconds of CPU, summed as threads end
    private var threads: [DedicatedThread] = []
    private var stopped = false

    init(threads count: Int) {
        for index in 0..<count {
            threads.append(
                DedicatedThread(name: "fc-load-\(index)") { [self] in
                    var spin: UInt64 = 0
                    while running.load(ordering: .relaxed) { spin &+= 1 }
                    var usage = timespec()
                    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &usage)
                    spent.add(usage.tv_sec * 1_000_000 + usage.tv_nsec / 1000, ordering: .relaxed)
                    _ = spin
                })
        }
    }

    /// Stops the threads and waits until each has counted its CPU time.
    func stop() {
        guard !stopped else { return }
        stopped = true
        running.store(false, ordering: .relaxed)
        for thread in threads { thread.join() }
    }

    var cpuSeconds: Double { Double(spent.load(ordering: .relaxed)) / 1e6 }
}
