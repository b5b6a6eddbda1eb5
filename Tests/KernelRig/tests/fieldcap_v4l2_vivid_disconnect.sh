#!/bin/bash
# rig-timeout: 150
# rig-share: 32
# A camera that disappears mid-recording (vivid's "Disconnect") and never comes back ends only its
# own stream: fieldcap waits for it to the end (rejoin, the default), the IMU records on, the
# session validates, the sidecar says what happened (away, with no return; ended early), and the
# exit status (3) says the session is incomplete. Then vivid comes back twice in a recording (it
# reconnects once its last user closes it) and is taken up each time, and once more after its
# module is reloaded. vivid is reloaded afterwards for the other tests.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
reload() {
	rmmod vivid 2>/dev/null || true
	modprobe vivid n_devs=2 node_types=0x1,0x1 input_types=0x0,0x0
	for _ in $(seq 50); do [ -e "$dev" ] && break; sleep 0.1; done
}
trap reload EXIT

session=$FIELDCAP_TEST_TMP/disconnect
status=0
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --imu synthetic:100,id=imu --duration 5s --out "$session" -q &
recorder=$!
# Wait until frames are being written (fieldcap starts slowly under emulation), then a second more.
for _ in $(seq 100); do [ -s "$session/cam.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1
# vivid reconnects as soon as its last other file handle closes (here v4l2-ctl's): hold one open
# so the disconnect lasts, as an unplugged camera's would.
exec 3<"$dev"
v4l2-ctl -d "$dev" -c disconnect=1
wait "$recorder" || status=$?
exec 3<&-
echo "fieldcap exited $status"
[ "$status" = 3 ] || { echo "FAIL: wanted exit status 3 (incomplete session)"; exit 1; }
"$fieldcap" validate -q "$session"

/usr/bin/python3 - "$session" <<'PY'
import json, sys
info = json.load(open(f"{sys.argv[1]}/fieldcap.json"))
cam = next(s for s in info["streams"] if s["id"] == "cam")
imu = next(s for s in info["streams"] if s["id"] == "imu")
print(f"cam: {cam['written']} frames, ended early: {cam.get('ended_early')}; imu: {imu['written']} samples")
fails = []
if "ended_early" not in cam: fails.append("the sidecar does not say the camera ended early")
if "ended_early" in imu: fails.append("the IMU ended too")
away = cam.get("away", [])
print(f"cam: away {away}")
if len(away) != 1 or away[0]["returned_at"] is not None: fails.append("one time away, with no return, was wanted")
if imu["written"] < 400: fails.append(f"the IMU stopped with the camera ({imu['written']} samples in 5 s at 100 Hz)")
if cam["written"] == 0 or cam["written"] > 120: fails.append(f"camera frames {cam['written']}: it should stop about a second in")
# The stream ends when the camera goes, not when the recording stops: the sidecar's time of the
# end is the moment after the last frame.
lines = open(f"{sys.argv[1]}/cam.timestamps.jsonl").read().splitlines()
ended = cam.get("ended_early_at", {}).get("monotonic_raw_ns")
if ended is None: fails.append("the sidecar does not say when the camera ended")
elif lines and not 0 <= ended - json.loads(lines[-1])["capture_ns"] < 1e9:
    fails.append(f"the camera's end is {(ended - json.loads(lines[-1])['capture_ns']) / 1e9:.2f} s after its last frame")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY

# The same camera coming back, twice: vivid reconnects once the last program holding it closes it
# (here fieldcap, which lets a lost device go), with its node left in sysfs and refusing opens
# (ENODEV) meanwhile. fieldcap takes it up again each time: exit 0, two times away with returns,
# frames after each, the session valid.
back=$FIELDCAP_TEST_TMP/back
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --imu synthetic:100,id=imu --duration 6s --out "$back" -q &
recorder=$!
for _ in $(seq 100); do [ -s "$back/cam.timestamps.jsonl" ] && break; sleep 0.1; done
for _ in 1 2; do
	sleep 1.5
	v4l2-ctl -d "$dev" -c disconnect=1
done
status=0
wait "$recorder" || status=$?
[ "$status" = 0 ] || { echo "FAIL: fieldcap exited $status; vivid came back each time (wanted 0)"; exit 1; }
"$fieldcap" validate -q "$back"
/usr/bin/python3 - "$back" <<'PY'
import json, sys
info = json.load(open(f"{sys.argv[1]}/fieldcap.json"))
cam = next(s for s in info["streams"] if s["id"] == "cam")
away = cam.get("away", [])
stamps = [json.loads(line)["capture_ns"] for line in open(f"{sys.argv[1]}/cam.timestamps.jsonl")]
print(f"cam: {cam['written']} frames; away: " + ", ".join(
    f"{a['seconds']:.2f} s ({a['records_at_nominal_rate']} frames) as {a.get('returned_as')}" for a in away))
fails = []
if len(away) != 2 or any(a["returned_at"] is None for a in away): fails.append("two times away, each with a return")
for a in away:
    if a["returned_at"] and not any(s >= a["returned_at"]["monotonic_raw_ns"] for s in stamps):
        fails.append(f"no frame after the return at {a['returned_at']['seconds_after_start']:.2f} s")
if "ended_early" in cam: fails.append(f"the camera reads as ended early: {cam['ended_early']}")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY

# vivid's module reloaded during a recording: unbound from its driver first (a module whose node a
# program holds cannot be removed), removed, loaded again. The camera that comes back is the same
# platform device and instance, and is taken up. This time udevd runs, as on a rig: fieldcap hears
# of the camera through udev's events (the guest runs none otherwise).
/lib/systemd/systemd-udevd --daemon
# Stopped afterwards, its control socket removed: the other tests run without udevd.
trap 'pkill -x systemd-udevd; sleep 0.2; rm -rf /run/udev; reload' EXIT
for _ in $(seq 50); do [ -S /run/udev/control ] && break; sleep 0.1; done
reloaded=$FIELDCAP_TEST_TMP/reloaded
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --imu synthetic:100,id=imu --duration 60s --out "$reloaded" \
	2>"$FIELDCAP_TEST_TMP/reloaded.stderr" &
recorder=$!
for _ in $(seq 100); do [ -s "$reloaded/cam.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1
echo vivid.0 >/sys/bus/platform/drivers/vivid/unbind
for _ in $(seq 50); do rmmod vivid 2>/dev/null && break; sleep 0.1; done
! lsmod | grep -q '^vivid ' || { echo "FAIL: vivid could not be removed once fieldcap let it go"; kill "$recorder"; exit 1; }
before=$(wc -l <"$reloaded/cam.timestamps.jsonl")
modprobe vivid n_devs=2 node_types=0x1,0x1 input_types=0x0,0x0
# Until frames of the reloaded camera reach the file (written in batches), 20 s at most.
for _ in $(seq 200); do [ "$(wc -l <"$reloaded/cam.timestamps.jsonl")" -gt $((before + 30)) ] && break; sleep 0.1; done
kill -INT "$recorder"
status=0
wait "$recorder" || status=$?
cat "$FIELDCAP_TEST_TMP/reloaded.stderr"
[ "$status" = 0 ] || { echo "FAIL: fieldcap exited $status; vivid came back after its reload (wanted 0)"; exit 1; }
grep -q "through udev's events" "$FIELDCAP_TEST_TMP/reloaded.stderr" \
	|| { echo "FAIL: with udevd running, fieldcap did not wait through udev's events"; exit 1; }
"$fieldcap" validate -q "$reloaded"
/usr/bin/python3 - "$reloaded" <<'PY'
import json, sys
info = json.load(open(f"{sys.argv[1]}/fieldcap.json"))
cam = next(s for s in info["streams"] if s["id"] == "cam")
away = cam.get("away", [])
stamps = [json.loads(line)["capture_ns"] for line in open(f"{sys.argv[1]}/cam.timestamps.jsonl")]
print(f"reloaded: {cam['written']} frames; away: {away}")
fails = []
if len(away) != 1 or away[0]["returned_at"] is None: fails.append("one time away, with a return")
elif not any(s >= away[0]["returned_at"]["monotonic_raw_ns"] for s in stamps): fails.append("no frame after the return")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
