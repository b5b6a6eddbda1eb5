#!/bin/bash
# rig-timeout: 300
# rig-share: 60
# A USB camera's own start and middle of exposure (#47): the UVC gadget puts each frame's PTS
# (the time its feeder queued it, CLOCK_MONOTONIC in 48 MHz ticks) and clock references (SCR: the
# same clock and the USB frame counter) in its payload headers; uvcvideo passes them through the
# metadata node. fieldcap reads that node beside the video and maps each PTS into
# CLOCK_MONOTONIC_RAW; with stamp=exposure-middle and the camera's exposure time set
# (ctrl.exposure_time_absolute=50, 5 ms, which the gadget's feeder answers), capture_ns is that
# and half the exposure. Checked against the feeder's log, frame by frame (the number the feeder
# drew in its pixels): each frame's exposure start lies at the feeder's clock reading as it
# queued it (the PTS is read just before), give or take its uncertainty_ns, and capture_ns 2.5 ms
# after it; the frames the model could not map yet (its first two seconds) keep the kernel's time
# and are counted, and every frame from 3 s on has its exposure start. The errors are printed.
# The gadget's camera clock (the rig's patch: usb_f_uvc clock_ppm, clock_offset_us) runs 300 ppm
# fast and its 32-bit count wraps in the recording; the model must find the rate, cross the wrap,
# and use dummy_hcd's frame numbers (the millisecond within the second, on both sides) to bound
# each frame's transit. Then vivid: refused for exposure-middle, the kernel's time for
# exposure-start, each saying why. Last, the same camera on auto exposure (the feeder changes
# its exposure time every 12 frames through 3 to 20 ms, as a camera following the light does):
# fieldcap follows it, and each frame's middle lies within its bound of the feeder's truth.
set -euo pipefail
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
. "$FIELDCAP_REPO/Tests/KernelRig/lib/uvc-gadget.sh"

work=$FIELDCAP_TEST_TMP/uvc-exposure
mkdir -p "$work"
uvc_gadget_modules 2
# With an auto-exposure mode and an exposure time control (bmControls bits 1 and 3), which the
# feeder answers and logs.
uvc_gadget_create fieldcap-exposure fc-e-0001 10
params=/sys/module/usb_f_uvc/parameters
trap 'set +e; echo 0 >$params/clock_ppm; echo 0 >$params/clock_offset_us; uvc_gadget_remove fieldcap-exposure' EXIT
cam=$(uvc_gadget_plug fieldcap-exposure 0 "$work/feeder.log")
# The camera's own clock (the rig's patch to the gadget): 300 ppm fast, its 32-bit count wrapping
# 4.5 s from now, in the recording after the model's first two seconds.
now_us=$(/usr/bin/python3 -c 'import time; print(int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6))')
echo 300 >$params/clock_ppm
/usr/bin/python3 -c "print(int(2**32 / (48 * 1.0003)) - $now_us - 4_500_000)" >$params/clock_offset_us
wrap_ns=$(( (now_us + 4500000) * 1000 ))
session=$work/session
"$fieldcap" --cam "$cam,size=320x240,fps=30,id=cam,ctrl.exposure_time_absolute=50,stamp=exposure-middle" \
	--duration 6s --out "$session" 2>"$work/stderr"
grep -q "capture_ns: the middle of the camera's exposure (its PTS and half of its fixed exposure time, 5.0 ms)" \
	"$work/stderr" || { cat "$work/stderr"; echo "FAIL: the start line does not say capture_ns is the middle"; exit 1; }
grep -qx "exposure 50" "$work/feeder.log" || { echo "FAIL: the feeder was not set to 5 ms of exposure"; exit 1; }
"$fieldcap" validate -q "$session"
/usr/bin/python3 - "$session" "$work/feeder.log" "$wrap_ns" <<'PY'
import json, statistics, sys
import os
sys.path.insert(0, os.environ["FIELDCAP_REPO"] + "/Tests/KernelRig/tools")
from uvc_check import feeder_log, identities, pts_read
session, feeder, wrap_mono_ns = sys.argv[1], sys.argv[2], int(sys.argv[3])
made, queued, _ = feeder_log(feeder)
pts = pts_read(feeder)
frames = [json.loads(line) for line in open(f"{session}/cam.frames.ndjson")]
stamps = [json.loads(line) for line in open(f"{session}/cam.timestamps.jsonl")]
seen = list(identities(f"{session}/cam.mkv", 320, 240))
exposure = json.load(open(f"{session}/fieldcap.json"))["streams"][0]["v4l2"]["exposure"]
fails = []
if len(seen) != len(frames): fails.append(f"{len(seen)} frames in the video, {len(frames)} in the frame log")
errors, bounds = [], []
half = 2_500_000  # half of the 5 ms exposure
for (number, _, valid), frame, stamp in zip(seen, frames, stamps):
    if "exposure_start_ns" not in frame: continue
    t, bound = frame["exposure_start_ns"], frame["exposure_uncertainty_ns"]
    # capture_ns is the middle: the start and half the exposure, its bound the start's and 50 µs.
    middle = stamp["capture_ns"]
    if middle < t + half or middle - (t + half) > stamp["uncertainty_ns"] or stamp["uncertainty_ns"] < bound + 50_000:
        fails.append(f"frame {frame['frame_number']}: capture_ns {middle - t} ns after its exposure start,"
                     f" not half the exposure within its bound")
    if not valid or number not in queued:
        fails.append(f"frame {frame['frame_number']}: its pixels name no frame the feeder queued")
        continue
    # The frame's own PTS (matched by the number in its pixels): the feeder read CLOCK_MONOTONIC
    # for it just before its RAW reading at the queue, and the gadget truncates it to a µs.
    # The PTS was read between two RAW readings (the gadget truncates it to a µs).
    earliest, truth = pts[number]
    if not earliest - 1_000 - bound <= t <= truth + bound:
        fails.append(f"frame {frame['frame_number']} (the feeder's {number}): {(t - truth) / 1e3:+.1f} µs from its"
                     f" queue, bound {bound / 1e3:.1f} µs")
    errors.append(t - truth)
    bounds.append(bound)
mapped = len(errors)
print(f"{mapped} of {len(frames)} frames stamped at their exposure start; error against the feeder's queue: "
      f"median {statistics.median(errors) / 1e3:+.1f} µs, {min(errors) / 1e3:+.1f} to {max(errors) / 1e3:+.1f} µs; "
      f"uncertainty median {statistics.median(bounds) / 1e3:.1f} µs, max {max(bounds) / 1e3:.1f} µs" if errors else "none")
if exposure.get("exposure_time_ns") != 5_000_000: fails.append(f"exposure_time_ns {exposure.get('exposure_time_ns')}")
# The camera's clock as the model found it: 48 MHz and 300 ppm; dummy_hcd's frame numbers (the
# millisecond within the second on both sides) keep time, so the transit bounds every frame.
rate = exposure.get("camera_clock_hz", 0)
print(f"camera clock {rate:.0f} Hz ({(rate / 48e6 - 1) * 1e6:+.1f} ppm; the gadget runs +300),"
      f" host frame modulus {exposure.get('host_frame_modulus')}")
# Within 50 ppm on a quiet host; on a busy one (the guest's USB late by milliseconds) within what
# the model says of its own rate (three times its error, which its bounds carry).
allowed = max(50e-6, 3 * exposure.get("camera_clock_rate_error_ppm", 0) * 1e-6)
if abs(rate / (48e6 * 1.0003) - 1) > allowed:
    fails.append(f"the camera clock's rate {rate:.0f} Hz is not 48 MHz + 300 ppm within {allowed * 1e6:.0f} ppm")
# The frame counters bound the transit of (almost) every reference: a busy guest delays a few.
references = exposure.get("clock_references", 0)
if exposure.get("host_frame_modulus") != 1000 or exposure.get("frame_counters_inconsistent", 0) * 10 > references:
    fails.append(f"the frame counters (dummy_hcd's, modulo 1000) should bound the transit of nine references in ten:"
                 f" {exposure.get('frame_counters_inconsistent')} of {references} did not")
after_wrap = [f for f in frames if "exposure_start_ns" in f and f["device_ns"] > wrap_mono_ns]
print(f"{len(after_wrap)} frames after the camera clock's 32-bit wrap")
if len(after_wrap) < 10: fails.append("too few frames after the camera clock's wrap")
print("exposure:", {k: exposure[k] for k in ("frames_with_exposure", "frames_without_exposure", "frames_held_back",
                                             "camera_clock_hz", "frame_counters_inconsistent", "restarts") if k in exposure})
# The model maps once it has two seconds of clock references: every frame from 3 s on has one.
late = [f for f in frames if f["dequeue_ns"] - frames[0]["dequeue_ns"] > 3_000_000_000]
missing = [f["frame_number"] for f in late if "exposure_start_ns" not in f]
if not late or missing: fails.append(f"frames after the first 3 s without their exposure start: {missing[:10]}")
if exposure["frames_with_exposure"] != mapped: fails.append("the sidecar's count differs from the frame log's")
for f in fails[:10]: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY

# A camera that does not report its exposure time (vivid has no exposure_time_absolute) is refused
# for stamp=exposure-middle at setup, saying what to use; exposure-start without a metadata node
# records on with the kernel's time and says why.
status=0
"$fieldcap" --cam "$FIELDCAP_VIDEO_DEVICE,size=320x180,stamp=exposure-middle" --duration 1s --out "$work/vivid-middle" \
	2>"$work/vivid-middle.stderr" || status=$?
[ "$status" != 0 ] && grep -q "does not report its exposure time (no exposure_time_absolute control); use stamp=exposure-start" \
	"$work/vivid-middle.stderr" || { cat "$work/vivid-middle.stderr"; echo "FAIL: exposure-middle on vivid (exit $status)"; exit 1; }
"$fieldcap" --cam "$FIELDCAP_VIDEO_DEVICE,size=320x180,stamp=exposure-start" --duration 1s --out "$work/vivid-start" \
	2>"$work/vivid-start.stderr"
grep -q "capture_ns: the kernel's time (stamp=exposure-start, but the camera has no metadata node)" \
	"$work/vivid-start.stderr" || { cat "$work/vivid-start.stderr"; echo "FAIL: exposure-start on vivid"; exit 1; }

# Auto exposure: the camera chooses each frame's exposure time; fieldcap follows it. And its clock
# stops travelling for 1.2 s (the rig's patch: usb_f_uvc clock_off, headers without PTS or SCR):
# those frames keep the kernel's time, fieldcap says so, and the stamps come back after.
echo 0 >$params/clock_ppm
echo 0 >$params/clock_offset_us
trap 'set +e; echo 0 >$params/clock_ppm; echo 0 >$params/clock_offset_us; echo 0 >$params/clock_off; uvc_gadget_remove fieldcap-exposure' EXIT
session=$work/auto
"$fieldcap" --cam "$cam,size=320x240,fps=30,id=cam,ctrl.auto_exposure=0,stamp=exposure-middle" \
	--duration 60s --out "$session" 2>"$work/auto.stderr" &
recorder=$!
for _ in $(seq 100); do [ -s "$session/cam.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 2
clock_off_ns=$(/usr/bin/python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW))')
echo 1 >$params/clock_off
sleep 1.2
# Read before the clock travels again (a Python start takes a while under emulation).
clock_on_ns=$(/usr/bin/python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW))')
echo 0 >$params/clock_off
# Stopped 2.5 s after the clock came back, however slow the host (a fixed duration ended a
# starved recording before the second it is judged on).
sleep 2.5
kill -INT "$recorder"
wait "$recorder"
grep -q "half of its exposure time, which its auto exposure chooses: followed" "$work/auto.stderr" \
	|| { cat "$work/auto.stderr"; echo "FAIL: the start line does not say the exposure is followed"; exit 1; }
grep -qx "ae_mode 2" "$work/feeder.log" || { echo "FAIL: the feeder was not set to auto exposure"; exit 1; }
"$fieldcap" validate -q "$session"
/usr/bin/python3 - "$session" "$work/feeder.log" "$clock_off_ns" "$clock_on_ns" <<'PY'
import bisect, json, os, statistics, sys
sys.path.insert(0, os.environ["FIELDCAP_REPO"] + "/Tests/KernelRig/tools")
from uvc_check import feeder_log, identities, pts_read
session, feeder = sys.argv[1], sys.argv[2]
clock_off, clock_on = int(sys.argv[3]), int(sys.argv[4])
made, queued, _ = feeder_log(feeder)
pts = pts_read(feeder)
# The exposure each feeder frame had: the feeder's own changes, frame by frame.
changes = [(int(w[1]), int(w[2]) * 100_000) for w in (line.split() for line in open(feeder)) if w[0] == "exposure_auto"]
frames = [json.loads(line) for line in open(f"{session}/cam.frames.ndjson")]
stamps = [json.loads(line) for line in open(f"{session}/cam.timestamps.jsonl")]
seen = list(identities(f"{session}/cam.mkv", 320, 240))
exposure = json.load(open(f"{session}/fieldcap.json"))["streams"][0]["v4l2"]["exposure"]
followed = exposure.get("exposure_followed", {})
fails, errors, bounds, exact = [], [], [], 0
for (number, _, valid), frame, stamp in zip(seen, frames, stamps):
    if "exposure_start_ns" not in frame or not valid or number not in queued: continue
    at = bisect.bisect_right([c[0] for c in changes], number) - 1
    if at < 0: continue  # before the feeder's first change of its own
    earliest, latest = pts[number]
    truth = latest + changes[at][1] // 2
    middle, bound = stamp["capture_ns"], stamp["uncertainty_ns"]
    # The PTS read between two RAW readings and truncated to a µs (as in the fixed part).
    if not earliest + changes[at][1] // 2 - 1_000 - bound <= middle <= truth + bound:
        fails.append(f"frame {frame['frame_number']} (the feeder's {number}, {changes[at][1] / 1e6:.1f} ms): "
                     f"{(middle - truth) / 1e3:+.1f} µs from the middle of its exposure, bound {bound / 1e3:.1f} µs")
    exact += frame.get("exposure_time_ns") == changes[at][1]
    errors.append(middle - truth)
    bounds.append(bound)
print(f"auto exposure: {len(changes)} changes by the feeder, {followed}; {len(errors)} frames checked, "
      f"{exact} with the feeder's exposure time exactly; error median "
      f"{statistics.median(errors) / 1e3:+.1f} µs ({min(errors) / 1e3:+.1f} to {max(errors) / 1e3:+.1f}), "
      f"bound median {statistics.median(bounds) / 1e3:.1f} µs, max {max(bounds) / 1e3:.1f} µs" if errors else "none")
if exposure.get("auto_exposure") is not True: fails.append("the sidecar does not say auto exposure")
if len(errors) < 40: fails.append(f"only {len(errors)} frames with an exposure middle to check")
if followed.get("changes", 0) < 3: fails.append(f"fieldcap saw {followed.get('changes')} changes of the exposure time")
if exact < len(errors) * 0.7: fails.append(f"only {exact} of {len(errors)} frames took the feeder's exposure time")
# The camera's clock stopped for 1.2 s: frames made well inside that time have no exposure
# start, fieldcap says why, and frames from a second after it came back have one again.
inside = [f for f in frames if clock_off + 500_000_000 < f["dequeue_ns"] < clock_on]
after = [f for f in frames if f["dequeue_ns"] > clock_on + 1_000_000_000]
print(f"clock stopped: {len(inside)} frames inside, {sum('exposure_start_ns' in f for f in inside)} with an exposure"
      f" start; {len(after)} after it, {sum('exposure_start_ns' in f for f in after)} with one")
if not inside or any("exposure_start_ns" in f for f in inside):
    fails.append("frames made while the camera's clock stopped have an exposure start")
if not after or not all("exposure_start_ns" in f for f in after):
    fails.append("frames a second after the camera's clock came back lack their exposure start")
notes = exposure.get("notes", [])
if not any("no PTS in the metadata for 30 frames" in n for n in notes):
    fails.append(f"the sidecar does not say the camera's clock stopped: {notes}")
for f in fails[:10]: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
echo "PASS: the exposure stamps, fixed and followed, and a camera clock that stops"
