#!/bin/bash
# rig-timeout: 120
# rig-share: 15
# A vivid camera and the IIO dummy IMU recorded together: the session validates, both streams
# are written, and both streams' capture_ns lie in one clock, CLOCK_MONOTONIC_RAW: inside the
# window read around the recording, overlapping in time, each at its own rate.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
v4l2-ctl -d "$dev" -c timestamp_source=1
trap 'v4l2-ctl -d "$dev" -c timestamp_source=0 >/dev/null 2>&1 || true' EXIT

raw_now() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW))'; }
session=$FIELDCAP_TEST_TMP/cam-and-imu
t0=$(raw_now)
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --imu "$imu,rate=200,trigger=$trig,id=imu" --duration 5s --out "$session" -q
t1=$(raw_now)
"$fieldcap" validate "$session"
/usr/bin/python3 - "$session" "$t0" "$t1" <<'PY'
import json, sys
session, t0, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fails = []
spans = {}
info = json.load(open(f"{session}/fieldcap.json"))
# The periods each stream's records span by the device's own count: vivid's sequence numbers (from
# the frame log), the IMU's samples plus those its timeline counts missing. On a busy host the
# emulated devices fall behind (vivid skips frames, the hrtimer ticks); their count says so, and
# the mean interval per period is still the rate asked for, in nanoseconds of one clock.
cam_log = [json.loads(l) for l in open(f"{session}/cam.frames.ndjson")]
imu_gaps = {s["id"]: s for s in info["streams"]}["imu"]["iio"]["timeline_gaps"]["samples_missing"]
for stream, rate in (("cam", 30), ("imu", 200)):
    times = [json.loads(l)["capture_ns"] for l in open(f"{session}/{stream}.timestamps.jsonl")]
    steps = cam_log[-1]["sequence"] - cam_log[0]["sequence"] if stream == "cam" else len(times) - 1 + imu_gaps
    mean = (times[-1] - times[0]) / steps / 1e6
    print(f"{stream}: {len(times)} records over {steps} periods, {(times[0] - t0) / 1e6:.0f}..{(times[-1] - t0) / 1e6:.0f} ms into the window, mean interval {mean:.2f} ms")
    if times[0] < t0 or times[-1] > t1: fails.append(f"{stream}: capture_ns outside the RAW window of the recording")
    if any(b < a for a, b in zip(times, times[1:])): fails.append(f"{stream}: capture_ns goes backwards")
    if abs(mean - 1000 / rate) > 0.25 * 1000 / rate: fails.append(f"{stream}: mean interval {mean:.2f} ms a period, not about {1000 / rate:.1f}")
    spans[stream] = (times[0], times[-1])
overlap = min(spans["cam"][1], spans["imu"][1]) - max(spans["cam"][0], spans["imu"][0])
print(f"the streams overlap for {overlap / 1e9:.2f} s")
if overlap < 3e9: fails.append("the two streams do not share most of the recording")
info = json.load(open(f"{session}/fieldcap.json"))
sources = {s["id"]: s for s in info["streams"]}
if sources["cam"]["v4l2"]["frames_stamped_at_dequeue"] != 0: fails.append("camera frames fell back to dequeue times")
if "monotonic_raw" not in sources["imu"]["iio"]["time_source"]: fails.append(f"imu time source {sources['imu']['iio']['time_source']}")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
