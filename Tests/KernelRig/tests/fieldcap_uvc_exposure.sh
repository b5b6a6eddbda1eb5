#!/bin/bash
# rig-timeout: 120
# rig-share: 25
# A USB camera's own start of exposure (#47): the UVC gadget puts each frame's PTS (the time its
# feeder queued it, CLOCK_MONOTONIC in 48 MHz ticks) and clock references (SCR: the same clock and
# the USB frame counter) in its payload headers; uvcvideo passes them through the metadata node.
# fieldcap, with stamp=exposure-start, reads that node beside the video, maps each PTS into
# CLOCK_MONOTONIC_RAW and writes it as capture_ns. Checked against the feeder's log, frame by
# frame (the number the feeder drew in its pixels): each such frame's time lies at the feeder's
# clock reading as it queued it (the PTS is read just before), give or take its uncertainty_ns;
# the frames the model could not map yet (its first two seconds) keep the kernel's time and are
# counted. The errors are printed. (dummy_hcd's frame counters do not keep time: only causality
# and the assumed transit bound the mapping here; the simulated counters of UVCClockTests cover
# the rest, and the camera clock's drift and wraps, which the gadget's clock, the kernel's own,
# cannot show.)
set -euo pipefail
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
. "$FIELDCAP_REPO/Tests/KernelRig/lib/uvc-gadget.sh"

work=$FIELDCAP_TEST_TMP/uvc-exposure
mkdir -p "$work"
uvc_gadget_modules 2
uvc_gadget_create fieldcap-exposure fc-e-0001
trap 'set +e; uvc_gadget_remove fieldcap-exposure' EXIT
cam=$(uvc_gadget_plug fieldcap-exposure 0 "$work/feeder.log")
session=$work/session
"$fieldcap" --cam "$cam,size=320x240,fps=30,id=cam,stamp=exposure-start" --duration 6s --out "$session" \
	2>"$work/stderr"
grep -q "capture_ns: the camera's start of exposure" "$work/stderr" \
	|| { cat "$work/stderr"; echo "FAIL: the start line does not say capture_ns is the start of exposure"; exit 1; }
"$fieldcap" validate -q "$session"
/usr/bin/python3 - "$session" "$work/feeder.log" <<'PY'
import json, statistics, sys
import os
sys.path.insert(0, os.environ["FIELDCAP_REPO"] + "/Tests/KernelRig/tools")
from uvc_check import feeder_log, identities
session, feeder = sys.argv[1:]
made, queued, _ = feeder_log(feeder)
frames = [json.loads(line) for line in open(f"{session}/cam.frames.ndjson")]
stamps = [json.loads(line) for line in open(f"{session}/cam.timestamps.jsonl")]
seen = list(identities(f"{session}/cam.mkv", 320, 240))
exposure = json.load(open(f"{session}/fieldcap.json"))["streams"][0]["v4l2"]["exposure"]
fails = []
if len(seen) != len(frames): fails.append(f"{len(seen)} frames in the video, {len(frames)} in the frame log")
errors, bounds = [], []
for (number, _, valid), frame, stamp in zip(seen, frames, stamps):
    if "exposure_start_ns" not in frame: continue
    t, bound = frame["exposure_start_ns"], frame["exposure_uncertainty_ns"]
    if stamp["capture_ns"] < t or stamp["capture_ns"] - t > bound:
        fails.append(f"frame {frame['frame_number']}: capture_ns is not its exposure start, within its bound")
    if not valid or number not in queued:
        fails.append(f"frame {frame['frame_number']}: its pixels name no frame the feeder queued")
        continue
    # The frame's own PTS (matched by the number in its pixels): the feeder read CLOCK_MONOTONIC
    # for it just before its RAW reading at the queue, and the gadget truncates it to a µs.
    truth = queued[number]
    if not truth - 50_000 - bound <= t <= truth + bound:
        fails.append(f"frame {frame['frame_number']} (the feeder's {number}): {(t - truth) / 1e3:+.1f} µs from its"
                     f" queue, bound {bound / 1e3:.1f} µs")
    errors.append(t - truth)
    bounds.append(bound)
mapped = len(errors)
print(f"{mapped} of {len(frames)} frames stamped at their exposure start; error against the feeder's queue: "
      f"median {statistics.median(errors) / 1e3:+.1f} µs, {min(errors) / 1e3:+.1f} to {max(errors) / 1e3:+.1f} µs; "
      f"uncertainty median {statistics.median(bounds) / 1e3:.1f} µs, max {max(bounds) / 1e3:.1f} µs" if errors else "none")
print("exposure:", {k: exposure[k] for k in ("frames_with_exposure", "frames_without_exposure", "frames_held_back",
                                             "camera_clock_hz", "frame_counters_inconsistent", "restarts") if k in exposure})
if mapped < 0.5 * len(frames): fails.append(f"only {mapped} of {len(frames)} frames had their exposure start")
if exposure["frames_with_exposure"] != mapped: fails.append("the sidecar's count differs from the frame log's")
for f in fails[:10]: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
