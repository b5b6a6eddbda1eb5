#!/bin/bash
# rig-timeout: 300
# rig-share: 40
# CLOCK_MONOTONIC's rate stepped mid-recording, as NTP daemons do: every frame's capture_ns must
# stay within the aim of the truth and inside its own uncertainty_ns. The truth comes from an
# independent reference (Tests/KernelRig/tools/clock-reference.c: the narrowest of 20 RAW,
# MONOTONIC, RAW brackets every millisecond), through which each frame's kernel timestamp is
# mapped. Two recordings of vivid at 640x480, 30 fps, start-of-exposure timestamps:
#   - `adjtimex -f` +500 ppm 4 s in (an NTP frequency update): every frame within 5 µs;
#   - `adjtimex -t 10833` (+83,333 ppm, chrony's maximum slew rate) 4 s in, back 1.5 s later:
#     every frame within 100 µs.
# The reference's own error near a step (it interpolates between its samples) is added to both
# limits, frame by frame; frames where it exceeds half the aim (the reference was paused across
# the change) are counted, not judged.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
# FIELDCAP_BIN (rig test -e FIELDCAP_BIN=...): another build to judge the same way (BENCHMARKS.md's before and after).
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
# The videos go to the scratch disk: 18 MB/s of raw frames over 9p would starve the guest.
work=$FIELDCAP_DISK_DIR/$FIELDCAP_TEST_NAME
rm -rf "$work" && mkdir -p "$work"
cleanup() {
	busybox adjtimex -f 0 -t 10000 >/dev/null 2>&1 || true
	v4l2-ctl -d "$dev" -c timestamp_source=0 >/dev/null 2>&1 || true
	[ -n "${reference:-}" ] && kill "$reference" 2>/dev/null || true
}
trap cleanup EXIT
gcc -O2 -o /tmp/clock-reference "$FIELDCAP_REPO/Tests/KernelRig/tools/clock-reference.c"
v4l2-ctl -d "$dev" -c timestamp_source=1

# record NAME STEP_COMMAND UNDO_COMMAND UNDO_AFTER_S
record() {
	local name=$1 step=$2 undo=$3 undo_after=$4
	busybox adjtimex -f 0 -t 10000 >/dev/null
	# Real-time priority: the recording must not delay the reference (a busy host still can).
	chrt -f 50 /tmp/clock-reference 1000 20 > "$work/$name.reference" &
	reference=$!
	local session=$work/$name
	"$fieldcap" --cam "$dev,size=640x480,fps=30,id=cam" --duration 11s --out "$session" -q &
	local recorder=$!
	for _ in $(seq 200); do [ -s "$session/cam.timestamps.jsonl" ] && break; sleep 0.1; done
	sleep 4
	echo "$name: $step at $(cut -d' ' -f1 /proc/uptime) s"
	busybox adjtimex $step >/dev/null
	if [ -n "$undo" ]; then
		sleep "$undo_after"
		echo "$name: $undo at $(cut -d' ' -f1 /proc/uptime) s"
		busybox adjtimex $undo >/dev/null
	fi
	wait "$recorder"
	busybox adjtimex -f 0 -t 10000 >/dev/null
	sleep 0.2
	kill "$reference"
	wait "$reference" || true
	reference=
	"$fieldcap" validate -q "$session"
	# The evidence, kept with the test's results (small: the video stays on the scratch disk).
	mkdir -p "$FIELDCAP_TEST_TMP/$name"
	cp "$work/$name.reference" "$session"/*.jsonl "$session"/*.ndjson "$session/fieldcap.json" "$FIELDCAP_TEST_TMP/$name/"
}
record step500 "-f $((500 * 65536))" "" 0
record slew83333 "-t 10833" "-t 10000" 1.5

/usr/bin/python3 - "$work" <<'PY'
import bisect, json, sys
work = sys.argv[1]
fails = []

def check(name, aim_ns, expect_ppm):
    ref = [tuple(map(int, l.split())) for l in open(f"{work}/{name}.reference") if len(l.split()) == 3]
    ref.sort(key=lambda r: r[1])
    monos = [r[1] for r in ref]
    offsets = [r[0] - r[1] for r in ref]
    # The reference's slopes, to see the step and bound its own interpolation error.
    slopes = [(offsets[i + 1] - offsets[i]) / max(1, monos[i + 1] - monos[i]) for i in range(len(ref) - 1)]
    big = max(abs(s) for s in slopes) * 1e6
    frames = [json.loads(l) for l in open(f"{work}/{name}/cam.frames.ndjson")]
    stamps = [json.loads(l) for l in open(f"{work}/{name}/cam.timestamps.jsonl")]
    assert len(frames) == len(stamps), (len(frames), len(stamps))
    errors, over, aimless, dequeued, worst_ref, unjudged, judged_at = [], [], [], 0, 0, 0, []
    for frame, stamp in zip(frames, stamps):
        assert frame["capture_ns"] == stamp["capture_ns"]
        if frame["capture_ns"] == frame["dequeue_ns"]:
            dequeued += 1
            continue
        t = frame["device_ns"]
        i = bisect.bisect_right(monos, t) - 1
        if i < 1 or i + 2 >= len(ref):
            fails.append(f"{name}: frame {frame['frame_number']} outside the reference's span")
            continue
        span = monos[i + 1] - monos[i]
        truth_offset = offsets[i] + (offsets[i + 1] - offsets[i]) * (t - monos[i]) / span
        # Interpolating across a change of rate is wrong by at most the change times a quarter
        # of the interval (the rates around it: three intervals each side); plus the two samples'
        # half brackets. Where the reference itself was paused across a change (a busy host
        # starves the emulated guest), it cannot judge a frame to the aim: such frames are counted.
        around = slopes[max(0, i - 3):i + 4]
        ref_bound = (max(around) - min(around)) * span / 4 + (ref[i][2] + ref[i + 1][2]) / 2
        if ref_bound > aim_ns / 2:
            unjudged += 1
            continue
        worst_ref = max(worst_ref, ref_bound)
        error = frame["capture_ns"] - (t + truth_offset)
        errors.append(abs(error))
        judged_at.append(t)
        if abs(error) > stamp["uncertainty_ns"] + ref_bound:
            over.append((frame["frame_number"], round(error), stamp["uncertainty_ns"], round(ref_bound)))
        if abs(error) > aim_ns + ref_bound:
            aimless.append((frame["frame_number"], round(error), round(ref_bound)))
    errors.sort()
    unc = sorted(s["uncertainty_ns"] for s, f in zip(stamps, frames) if f["capture_ns"] != f["dequeue_ns"])
    pct = lambda xs, q: xs[min(len(xs) - 1, int(len(xs) * q))] if xs else 0
    info = json.load(open(f"{work}/{name}/fieldcap.json"))
    mapping = next(s for s in info["streams"] if s["id"] == "cam")["v4l2"]["clock_mapping"]
    print(f"{name}: {len(frames)} frames, {len(errors)} mapped and judged, {unjudged} where the reference paused, {dequeued} stamped at dequeue; reference: {len(ref)} samples, "
          f"steepest slope {big:.0f} ppm, its own bound up to {worst_ref / 1000:.1f} µs")
    print(f"  |error| median {pct(errors, .5):.0f} ns, p99 {pct(errors, .99):.0f} ns, max {errors[-1] if errors else 0:.0f} ns; "
          f"uncertainty_ns median {pct(unc, .5)}, max {unc[-1] if unc else 0}")
    print(f"  {len(over)} mapped frames outside their uncertainty_ns, {len(aimless)} above the aim of {aim_ns} ns")
    widest = sorted(((s["uncertainty_ns"], f["frame_number"], round(f["capture_ns"] / 1e6) % 100000) for s, f in zip(stamps, frames)), reverse=True)[:3]
    print(f"  widest bounds (ns, frame, ms): {widest}")
    worst = mapping.get("worst_uncertainty", {})
    print(f"  sidecar: {mapping.get('rate_changes')} rate changes, worst uncertainty {worst.get('ns')} ns "
          f"at {worst.get('seconds_after_start', 0):.2f} s")
    if big < expect_ppm * 0.8: fails.append(f"{name}: the reference never saw the {expect_ppm} ppm step (steepest {big:.0f} ppm)")
    if mapping.get("rate_changes", 0) < 1: fails.append(f"{name}: the sidecar counts no rate change")
    if len(errors) < 0.8 * len(frames): fails.append(f"{name}: only {len(errors)} of {len(frames)} frames were mapped and judged")
    # The steps themselves must have been judged: frames in the 300 ms around each change of rate.
    # Located on the reference's rate over 100 ms windows (its 1 ms slopes are too noisy for 500 ppm).
    def offset_at(t):
        i = min(max(bisect.bisect_right(monos, t) - 1, 0), len(monos) - 2)
        return offsets[i] + (offsets[i + 1] - offsets[i]) * (t - monos[i]) / max(1, monos[i + 1] - monos[i])
    grid = list(range(monos[0], monos[-1] - 100_000_000, 100_000_000))
    rates = [(offset_at(t + 100_000_000) - offset_at(t)) / 100_000_000 for t in grid]
    steps = []
    for k in range(1, len(rates)):
        if abs(rates[k] - rates[k - 1]) > expect_ppm * 0.3e-6 and (not steps or grid[k] - steps[-1] > 500_000_000):
            steps.append(grid[k - 1])
    # Changes while the camera recorded (the last one puts the rate back after it stopped).
    steps = [t for t in steps if frames[0]["device_ns"] <= t <= frames[-1]["device_ns"] - 300_000_000]
    if not steps: fails.append(f"{name}: no change of rate found in the reference while recording")
    for t in steps:
        near = sum(1 for m in judged_at if t <= m <= t + 300_000_000)
        print(f"  a change of rate near {(t - monos[0]) / 1e9:.1f} s of the reference: {near} frames judged in the 300 ms from there")
        if near < 3: fails.append(f"{name}: only {near} frames judged just after the change of rate")
    for frame, error, bound, ref_bound in over[:10]:
        fails.append(f"{name}: frame {frame} off by {error} ns, above its uncertainty_ns {bound} (+{ref_bound} reference)")
    for frame, error, ref_bound in aimless[:10]:
        fails.append(f"{name}: frame {frame} off by {error} ns, above the aim {aim_ns} ns (+{ref_bound} reference)")

check("step500", 5_000, 500)
check("slew83333", 100_000, 80_000)
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
