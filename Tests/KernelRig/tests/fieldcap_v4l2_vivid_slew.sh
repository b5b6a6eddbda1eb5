#!/bin/bash
# rig-timeout: 150
# rig-share: 25
# NTP-style slewing of CLOCK_MONOTONIC after the recording started (`adjtimex -f`, +500 ppm, the
# kernel's limit) must not bend capture_ns: the kernel's MONOTONIC timestamps are mapped into
# MONOTONIC_RAW with a clock pair read at every dequeue, so the lag between dequeue time and
# capture_ns stays put, where a one-time offset measured at start drifts by the slew.
# (fieldcap_v4l2_vivid_rate_step judges every frame through such a change.)
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
cleanup() {
	busybox adjtimex -f 0 >/dev/null 2>&1 || true
	v4l2-ctl -d "$dev" -c timestamp_source=0 >/dev/null 2>&1 || true
}
trap cleanup EXIT
# Start-of-exposure stamps: in the past at dequeue, so fieldcap uses (maps) them.
v4l2-ctl -d "$dev" -c timestamp_source=1
busybox adjtimex -f 0 >/dev/null

session=$FIELDCAP_TEST_TMP/slew
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --duration 12s --out "$session" -q &
recorder=$!
for _ in $(seq 150); do [ -s "$session/cam.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1
clocks() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC) - time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW), time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW))'; }
read -r offset_before raw_before <<<"$(clocks)"
busybox adjtimex -f $((500 * 65536)) >/dev/null
slew_raw_ns=$raw_before
wait "$recorder"
read -r offset_after raw_after <<<"$(clocks)"
busybox adjtimex -f 0 >/dev/null
"$fieldcap" validate -q "$session"

/usr/bin/python3 - "$session" "$slew_raw_ns" "$offset_before" "$offset_after" "$raw_before" "$raw_after" <<'PY'
import json, statistics, sys
session, slew_raw = sys.argv[1], int(sys.argv[2])
offset_before, offset_after, raw_before, raw_after = map(int, sys.argv[3:7])
measured_ppm = (offset_after - offset_before) / (raw_after - raw_before) * 1e6
print(f"CLOCK_MONOTONIC against RAW while slewed: {measured_ppm:+.0f} ppm")
fails = []
if not 350 <= measured_ppm <= 650: fails.append(f"the slew did not take: {measured_ppm:.0f} ppm")

frames = [json.loads(l) for l in open(f"{session}/cam.frames.ndjson")]
mapped = [f for f in frames if f["capture_ns"] != f["dequeue_ns"]]
print(f"{len(frames)} frames, {len(mapped)} stamped from the mapped kernel time")
if len(mapped) < 0.9 * len(frames): fails.append("most frames should carry the mapped kernel time")
first = mapped[0]
one_time_offset = first["capture_ns"] - first["device_ns"]  # what a start-time offset would use
before = [f for f in mapped if f["dequeue_ns"] < slew_raw]
late = [f for f in mapped if f["dequeue_ns"] > slew_raw + 6_000_000_000]
if len(before) < 10 or len(late) < 30: fails.append(f"too few frames around the slew: {len(before)} before, {len(late)} 6 s after")
else:
    lag = lambda fs: statistics.median(f["dequeue_ns"] - f["capture_ns"] for f in fs)
    lag_one_time = lambda fs: statistics.median(f["dequeue_ns"] - (f["device_ns"] + one_time_offset) for f in fs)
    ours = (lag(late) - lag(before)) / 1e6
    theirs = (lag_one_time(late) - lag_one_time(before)) / 1e6
    print(f"dequeue lag change across the slew: fieldcap {ours:+.3f} ms, a one-time offset {theirs:+.3f} ms")
    if abs(ours) > 1.0: fails.append(f"fieldcap's mapping drifted {ours:.3f} ms with the slew")
    if abs(theirs) < 2.5: fails.append(f"a one-time offset drifted only {theirs:.3f} ms: the test did not exercise the slew")
info = json.load(open(f"{session}/fieldcap.json"))
drift = next(s for s in info["streams"] if s["id"] == "cam")["v4l2"]["clock_mapping"]["drift_ppm"]
print(f"the sidecar's clock mapping drift: {drift:+.1f} ppm")
if not 350 <= abs(drift) <= 650: fails.append(f"the sidecar's drift {drift} ppm does not show the slew")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
