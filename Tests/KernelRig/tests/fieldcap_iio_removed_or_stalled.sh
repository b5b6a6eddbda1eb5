#!/bin/bash
# rig-timeout: 150
# rig-share: 30
# An IMU that disappears (an IIO dummy device removed through configfs during capture) or
# stalls (its trigger slowed to a crawl, with stall=1s) ends only its own stream: the camera
# and the other IMU record to the end, the session validates, the sidecar says what happened
# and when, and the exit status (3) says the session is incomplete.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
T=${FIELDCAP_IIO_TRIGGER_SYSFS:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
configfs=/sys/kernel/config/iio/devices/dummy
cleanup() {
	rmdir "$configfs/rmtest0" 2>/dev/null || true
	echo 100 > "$T/sampling_frequency" 2>/dev/null || true
}
trap cleanup EXIT

check() { # check SESSION GONE_ID OTHER_IDS... : GONE_ID ended early, the others did not
	/usr/bin/python3 - "$@" <<'PY'
import json, sys
session, gone, others = sys.argv[1], sys.argv[2], sys.argv[3:]
info = json.load(open(f"{session}/fieldcap.json"))
streams = {s["id"]: s for s in info["streams"]}
fails = []
g = streams[gone]
print(f"{gone}: {g['written']} written, ended early: {g.get('ended_early')}, at {g.get('ended_early_at', {}).get('seconds_after_start')} s")
if "ended_early" not in g: fails.append(f"the sidecar does not say {gone} ended early")
if not 0.5 < g.get("ended_early_at", {}).get("seconds_after_start", -1) < 5: fails.append(f"{gone}: no plausible time it ended")
for other in others:
    o = streams[other]
    print(f"{other}: {o['written']} written, {'ended early' if 'ended_early' in o else 'to the end'}")
    if "ended_early" in o: fails.append(f"{other} ended too: {o['ended_early']}")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
}

# --- removed: a second dummy device made for the test, removed mid-recording ---------------
mkdir "$configfs/rmtest0"
session=$FIELDCAP_TEST_TMP/removed
status=0
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --imu "rmtest0,rate=100,trigger=$trig,id=gone" \
	--imu "$imu,rate=100,trigger=$trig,id=imu" --duration 6s --out "$session" -q &
recorder=$!
for _ in $(seq 100); do [ -s "$session/gone.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1.5
rmdir "$configfs/rmtest0"
wait "$recorder" || status=$?
echo "removed: fieldcap exited $status"
[ "$status" = 3 ] || { echo "FAIL: wanted exit status 3 (incomplete session)"; exit 1; }
"$fieldcap" validate -q "$session"
check "$session" gone cam imu
grep -q '"ended_early" : ".*gone' "$session/fieldcap.json" || { echo "FAIL: the error does not say the device is gone"; grep ended_early "$session/fieldcap.json"; exit 1; }

# --- stalled: the trigger slowed to one sample every 10 s, with stall=1s -----------------------
session=$FIELDCAP_TEST_TMP/stalled
status=0
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --imu "$imu,rate=100,trigger=$trig,stall=1s,id=imu" \
	--duration 6s --out "$session" -q &
recorder=$!
for _ in $(seq 100); do [ -s "$session/imu.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1
echo 0.1 > "$T/sampling_frequency"
wait "$recorder" || status=$?
echo 100 > "$T/sampling_frequency"
echo "stalled: fieldcap exited $status"
[ "$status" = 3 ] || { echo "FAIL: wanted exit status 3 (incomplete session)"; exit 1; }
"$fieldcap" validate -q "$session"
check "$session" imu cam
grep -q '"ended_early" : ".*no sample for 1000 ms' "$session/fieldcap.json" || { echo "FAIL: the error does not say the IMU stalled"; exit 1; }
