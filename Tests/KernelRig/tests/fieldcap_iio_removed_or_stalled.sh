#!/bin/bash
# rig-timeout: 150
# rig-share: 30
# An IMU that disappears (an IIO dummy device removed through configfs during capture) or
# stalls (its trigger slowed to a crawl, with stall=1s) ends only its own stream: the camera
# and the other IMU record to the end, the session validates, the sidecar says what happened
# and when (within a few seconds after the test's removal or slowdown, read in CLOCK_MONOTONIC_RAW
# around it: a busy host starts the recorder late, so a time after its start says nothing), and
# the exit status (3) says the session is incomplete. The recordings end by SIGTERM a few seconds
# after the action (their duration only a cap), so that a late start never ends one before it.
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

raw_ns() { /usr/bin/python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW))'; }

check() { # check SESSION ACTED_FROM_NS ACTED_TO_NS LATEST_S GONE_ID OTHER_IDS... : GONE_ID ended
	# early, between the test's action and LATEST_S seconds after it; the others did not
	/usr/bin/python3 - "$@" <<'PY'
import json, sys
session, acted_from, acted_to, latest_s, gone, others = \
    sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6:]
info = json.load(open(f"{session}/fieldcap.json"))
streams = {s["id"]: s for s in info["streams"]}
fails = []
g = streams[gone]
at = g.get("ended_early_at", {})
print(f"{gone}: {g['written']} written, ended early: {g.get('ended_early')}, at {at.get('seconds_after_start')} s")
if "ended_early" not in g: fails.append(f"the sidecar does not say {gone} ended early")
# The last sample can precede the action by a period; the recorder notices within LATEST_S.
after = (at.get("monotonic_raw_ns", 0) - acted_from) / 1e9
print(f"{gone}: ended {after:+.3f} s after the action began (it took {(acted_to - acted_from) / 1e9:.3f} s)")
if not -0.5 < after < (acted_to - acted_from) / 1e9 + latest_s:
    fails.append(f"{gone}: ended {after:+.3f} s after the action, not within {latest_s} s of it")
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
	--imu "$imu,rate=100,trigger=$trig,id=imu" --duration 60s --out "$session" -q &
recorder=$!
for _ in $(seq 100); do [ -s "$session/gone.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1.5
acted_from=$(raw_ns)
rmdir "$configfs/rmtest0"
acted_to=$(raw_ns)
sleep 3
kill -TERM "$recorder"
wait "$recorder" || status=$?
echo "removed: fieldcap exited $status"
[ "$status" = 3 ] || { echo "FAIL: wanted exit status 3 (incomplete session)"; exit 1; }
"$fieldcap" validate -q "$session"
check "$session" "$acted_from" "$acted_to" 2 gone cam imu
grep -q '"ended_early" : ".*gone' "$session/fieldcap.json" || { echo "FAIL: the error does not say the device is gone"; grep ended_early "$session/fieldcap.json"; exit 1; }

# --- stalled: the trigger slowed to one sample every 10 s, with stall=1s -----------------------
session=$FIELDCAP_TEST_TMP/stalled
status=0
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --imu "$imu,rate=100,trigger=$trig,stall=1s,id=imu" \
	--duration 60s --out "$session" -q &
recorder=$!
for _ in $(seq 100); do [ -s "$session/imu.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1
acted_from=$(raw_ns)
echo 0.1 > "$T/sampling_frequency"
acted_to=$(raw_ns)
sleep 4
kill -TERM "$recorder"
wait "$recorder" || status=$?
echo 100 > "$T/sampling_frequency"
echo "stalled: fieldcap exited $status"
[ "$status" = 3 ] || { echo "FAIL: wanted exit status 3 (incomplete session)"; exit 1; }
"$fieldcap" validate -q "$session"
check "$session" "$acted_from" "$acted_to" 3 imu cam
grep -q '"ended_early" : ".*no sample for 1000 ms' "$session/fieldcap.json" || { echo "FAIL: the error does not say the IMU stalled"; exit 1; }
