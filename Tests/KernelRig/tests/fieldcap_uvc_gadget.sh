#!/bin/bash
# rig-timeout: 240
# rig-share: 55
# Two USB cameras as a webcam is one: UVC gadgets on dummy_hcd (lib/uvc-gadget.sh), enumerated by
# the real USB core and read through the real uvcvideo, fed by tools/uvc-feeder.c, recorded with the
# IIO dummy. fieldcap list shows them with their modes; a YUYV and an MJPEG recording validate;
# every frame in each video is one the feeder made (its number and clock reading in the pixels),
# in order, none twice, and the kernel's sequence numbers count exactly the feeder's frames it
# missed; each frame's capture_ns lies between the feeder handing the frame over and the gadget
# giving its buffer back, within its uncertainty_ns. Errors against the feeder's clock are
# printed: the first measure of fieldcap's timestamps on a USB camera. Then the camera is
# unplugged mid-recording: its stream ends with every frame it had, and the IMU records on.
set -euo pipefail
imu=${FIELDCAP_IIO_DEVICE:?not in the kernel rig guest}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
. "$FIELDCAP_REPO/Tests/KernelRig/lib/uvc-gadget.sh"

work=$FIELDCAP_TEST_TMP/uvc
mkdir -p "$work"
uvc_gadget_modules 2
uvc_gadget_create fieldcap-cam-a fc-a-0001
uvc_gadget_create fieldcap-cam-b fc-b-0002
# The guest runs the later tests: the gadgets go, whatever happened.
trap 'set +e; uvc_gadget_remove fieldcap-cam-a; uvc_gadget_remove fieldcap-cam-b' EXIT
cam_a=$(uvc_gadget_plug fieldcap-cam-a 0 "$work/feeder-a.log")
cam_b=$(uvc_gadget_plug fieldcap-cam-b 1 "$work/feeder-b.log")
echo "the gadgets are $cam_a and $cam_b (uvcvideo)"

"$fieldcap" list > "$work/list.txt"
cat "$work/list.txt"
/usr/bin/python3 - "$work/list.txt" "$cam_a" <<'PY'
import sys
lines, node = open(sys.argv[1]).read().splitlines(), sys.argv[2]
# The camera's block: its line, then the lines indented under it.
start = next((i for i, line in enumerate(lines) if line.startswith(f"  {node} ")), None)
block = ""
if start is not None:
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("    ")), len(lines))
    block = "\n".join(lines[start:end])
fails = [f"fieldcap list does not show {node}"] if not block else []
for want in ("uvcvideo", "fieldcap test camera", "YUYV", "MJPG", "640x480", "320x240", "1280x720"):
    if block and want not in block: fails.append(f"fieldcap list: {node} without {want!r}")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY

session=$work/session
"$fieldcap" --cam "$cam_a,size=320x240,fps=30,id=yuyv" --cam "$cam_b,size=640x480,fps=15,format=MJPG,id=mjpeg" \
	--imu "$imu,rate=200,trigger=$trig,id=imu" --duration 4s --out "$session" -q
"$fieldcap" validate "$session"
/usr/bin/python3 "$FIELDCAP_REPO/Tests/KernelRig/tools/uvc_check.py" "$session" \
	yuyv:320x240:"$work/feeder-a.log" mjpeg:640x480:"$work/feeder-b.log"

# Unplugged mid-recording: the camera's stream ends (exit 3, incomplete) with every frame it had
# and the IMU records on. uvcvideo hands every queued buffer back empty and flagged ERROR as its
# node goes; whether fieldcap dequeues them before it sees the node gone is a race, so the count
# is printed, not required (DequeueLoopTests proves what happens to them). None is a frame.
unplugged=$work/unplugged
status=0
"$fieldcap" --cam "$cam_a,size=320x240,fps=30,id=cam" --imu "$imu,rate=200,trigger=$trig,id=imu" --duration 4s \
	--out "$unplugged" -q 2>"$work/unplugged.stderr" &
recorder=$!
for _ in $(seq 100); do [ -s "$unplugged/cam.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1
uvc_gadget_unplug fieldcap-cam-a
wait "$recorder" || status=$?
cat "$work/unplugged.stderr"
[ "$status" = 3 ] || { echo "FAIL: fieldcap exited $status after the unplug, wanted 3 (incomplete session)"; exit 1; }
"$fieldcap" validate -q "$unplugged"
/usr/bin/python3 - "$unplugged" "$work/unplugged.stderr" <<'PY'
import json, subprocess, sys
session, stderr = sys.argv[1], open(sys.argv[2]).read()
info = json.load(open(f"{session}/fieldcap.json"))
cam = next(s for s in info["streams"] if s["id"] == "cam")
imu = next(s for s in info["streams"] if s["id"] == "imu")
empty = cam["v4l2"]["empty_buffers"]
probed = int(subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
    "stream=nb_read_frames", "-of", "csv=p=0", f"{session}/cam.mkv"], capture_output=True, text=True).stdout)
print(f"cam: {cam['written']} frames written, {probed} in the video; ended early: {cam.get('ended_early')}")
print(f"cam: {empty} empty buffers dequeued as the camera went" + ("" if empty else " (fieldcap saw the node go first)"))
fails = []
if "ended_early" not in cam: fails.append("the sidecar does not say the camera ended early")
if "ended_early" in imu: fails.append("the IMU ended with the camera")
if probed != cam["written"]: fails.append(f"{cam['written']} frames written, {probed} in the video")
if "lost written data" in stderr: fails.append("an empty buffer was written as a frame")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
