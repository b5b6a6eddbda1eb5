#!/bin/bash
# rig-timeout: 240
# rig-share: 60
# A USB camera unplugged and plugged in again, three times, in a segmented recording with the IIO
# dummy (stopped after the last return): a UVC gadget (lib/uvc-gadget.sh) unbound from its dummy
# controller and bound again, a new feeder each time. fieldcap waits for the same camera (its USB
# port and serial, through the kernel's uevents: the guest runs no udevd), opens it again with the
# format it had, and the stream goes on under its id. Checked by tools/uvc_rejoin_check.py: every
# segment validates, each time away is in the sidecars and the index with its return and the
# frames it is worth (each segment its own part), every frame is one a feeder made, in order, the
# index counts as missing exactly what uvcvideo skipped within a plug (the sequence restart at a
# return is not lost), and fieldcap loses none of the IMU's samples. Then a different camera
# (another serial) in the same port is not taken up, and the camera itself in another port is.
set -euo pipefail
imu=${FIELDCAP_IIO_DEVICE:?not in the kernel rig guest}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
. "$FIELDCAP_REPO/Tests/KernelRig/lib/uvc-gadget.sh"

work=$FIELDCAP_TEST_TMP/uvc-rejoin
mkdir -p "$work"
# Two controllers, as fieldcap_uvc_gadget loads them (whichever test runs first loads the module).
uvc_gadget_modules 2
uvc_gadget_create fieldcap-rejoin fc-r-0001
trap 'set +e; uvc_gadget_remove fieldcap-rejoin; uvc_gadget_remove fieldcap-other' EXIT
cam=$(uvc_gadget_plug fieldcap-rejoin 0 "$work/feeder-0.log")
echo "the gadget is $cam (uvcvideo)"

recording=$work/recording
"$fieldcap" --cam "$cam,size=320x240,fps=30,id=cam" --imu "$imu,rate=200,trigger=$trig,id=imu" \
	--segment 4s --duration 90s --out "$recording" -q 2>"$work/stderr" &
recorder=$!
for _ in $(seq 150); do compgen -G "$recording/*/cam.timestamps.jsonl" >/dev/null && break; sleep 0.1; done
sleep 2
for plug in 1 2 3; do
	t0=$(date +%s.%N)
	uvc_gadget_unplug fieldcap-rejoin
	sleep 1
	node=$(uvc_gadget_plug fieldcap-rejoin 0 "$work/feeder-$plug.log")
	t1=$(date +%s.%N)
	echo "plug $plug: back as $node after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
	# Until fieldcap streams from it again (the feeder logs the host's stream start), 15 s at most,
	# then a moment of frames: a slow return is measured, not cut short by the next unplug.
	for _ in $(seq 150); do grep -q '^stream ' "$work/feeder-$plug.log" && break; sleep 0.1; done
	echo "plug $plug: fieldcap streaming again $(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after uvcvideo bound it"
	sleep 1.5
done
# Stopped a moment after the last return, however long the replugs took on a loaded host.
kill -INT "$recorder"
status=0
wait "$recorder" || status=$?
cat "$work/stderr"
[ "$status" = 0 ] || {
	echo "FAIL: fieldcap exited $status; the camera came back each time (wanted 0)"
	grep -h '"away"' -A12 "$recording"/*/fieldcap.json | grep -E 'returned_at|refused|reason' | head -20
	exit 1
}
"$fieldcap" validate -q "$recording"
/usr/bin/python3 "$FIELDCAP_REPO/Tests/KernelRig/tools/uvc_rejoin_check.py" "$recording" cam 320x240 imu 3 \
	"$work"/feeder-0.log "$work"/feeder-1.log "$work"/feeder-2.log "$work"/feeder-3.log

# Another camera in the same port (another serial) is not taken up, and the sidecar says what
# came; then the camera itself in another port (its serial names it, as udev's by-id link does)
# is taken up.
uvc_gadget_create fieldcap-other fc-o-0002
other=$work/other
"$fieldcap" --cam "$cam,size=320x240,fps=30,id=cam" --imu "$imu,rate=200,trigger=$trig,id=imu" \
	--duration 90s --out "$other" -q 2>"$work/other.stderr" &
recorder=$!
for _ in $(seq 150); do [ -s "$other/cam.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1
uvc_gadget_unplug fieldcap-rejoin
uvc_gadget_plug fieldcap-other 0 "$work/feeder-other.log" >/dev/null
# fieldcap looks at every uevent: a moment to see the stranger in the port.
sleep 2
uvc_gadget_unplug fieldcap-other
moved=$(uvc_gadget_plug fieldcap-rejoin 1 "$work/feeder-moved.log")
echo "the camera is back as $moved on dummy_udc.1"
for _ in $(seq 150); do grep -q '^stream ' "$work/feeder-moved.log" && break; sleep 0.1; done
sleep 1.5
kill -INT "$recorder"
status=0
wait "$recorder" || status=$?
cat "$work/other.stderr"
[ "$status" = 0 ] || { echo "FAIL: fieldcap exited $status; the camera came back in another port (wanted 0)"; exit 1; }
"$fieldcap" validate -q "$other"
/usr/bin/python3 - "$other" "$moved" <<'PY'
import json, sys
info = json.load(open(f"{sys.argv[1]}/fieldcap.json"))
cam = next(s for s in info["streams"] if s["id"] == "cam")
away = cam.get("away", [])
stamps = [json.loads(line)["capture_ns"] for line in open(f"{sys.argv[1]}/cam.timestamps.jsonl")]
print(f"cam: away {away}")
fails = []
if len(away) != 1 or away[0]["returned_at"] is None: fails.append("one time away, with a return, was wanted")
else:
    notes = away[0].get("notes", [])
    if not any("fc-o-0002" in note for note in notes):
        fails.append("the sidecar does not say another camera (serial fc-o-0002) came in its place")
    if away[0].get("returned_as") != sys.argv[2]: fails.append(f"it came back as {sys.argv[2]}, not {away[0].get('returned_as')}")
    if not any("dummy_hcd.1" in note for note in notes): fails.append("the sidecar does not say it came back on another bus")
    if not any(s >= away[0]["returned_at"]["monotonic_raw_ns"] for s in stamps): fails.append("no frame after the return")
if "ended_early" in cam: fails.append(f"the camera reads as ended early: {cam['ended_early']}")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
