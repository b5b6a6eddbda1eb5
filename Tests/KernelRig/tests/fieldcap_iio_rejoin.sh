#!/bin/bash
# rig-timeout: 120
# rig-share: 30
# IMUs whose device goes away and comes back, twice, in a recording with a vivid camera: two
# IIO dummies made for the test, removed through configfs and made again under their names (the
# second time in the other order: each comes back as the other's iio:deviceN). One runs on the rig's hrtimer trigger (it outlives the
# device: attached again), the other on the trigger fieldcap made for it (reused, then removed
# at the end). fieldcap waits for the same device (its name: the dummy hangs on no parent),
# through the kernel's uevents (the guest runs no udevd), sets it up as it was, and the stream
# goes on under its id: the session validates, exit 0, each stream's sidecar entry has two times
# away with their returns, samples come after each return, none inside a time away, and the time
# away is neither a timeline gap nor a drop. The rig's own dummy and trigger are not touched.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || {
	echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"
	exit 1
}
configfs=/sys/kernel/config/iio/devices/dummy
trap 'rmdir "$configfs/rjtest0" "$configfs/rjtest1" 2>/dev/null || true' EXIT
node_of() { grep -lx "$1" /sys/bus/iio/devices/iio:device*/name | sed 's|.*/\(iio:device[0-9]*\)/name|\1|'; }

# Until both streams have written since (the writer syncs once a second); a slow guest's rmdir
# and mkdir take seconds, so the rounds follow the recording, not the clock.
flowing() {
	local imu0 made0
	imu0=$(wc -l <"$session/imu.timestamps.jsonl") made0=$(wc -l <"$session/made.timestamps.jsonl")
	for _ in $(seq 100); do
		[ "$(wc -l <"$session/imu.timestamps.jsonl")" -gt "$imu0" ] \
			&& [ "$(wc -l <"$session/made.timestamps.jsonl")" -gt "$made0" ] && return 0
		sleep 0.1
	done
	echo "FAIL: no samples from both IMUs within 10 s"
	return 1
}

mkdir "$configfs/rjtest0" "$configfs/rjtest1"
# `made` keeps the device's own timestamp clock (clock=keep), set to boottime here: a dummy made
# again starts on realtime, and fieldcap must set boottime again, as the stream had it.
echo boottime >"/sys/bus/iio/devices/$(node_of rjtest1)/current_timestamp_clock"
session=$FIELDCAP_TEST_TMP/iio-rejoin
status=0
# --duration is a cap only: the recording is stopped once samples flow after the second return.
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --imu "rjtest0,rate=100,trigger=$trig,id=imu" \
	--imu "rjtest1,rate=100,clock=keep,id=made" --duration 40s --out "$session" 2>"$FIELDCAP_TEST_TMP/rejoin.stderr" &
recorder=$!
for _ in $(seq 100); do
	[ -s "$session/made.timestamps.jsonl" ] && [ -s "$session/imu.timestamps.jsonl" ] && break
	sleep 0.1
done
sleep 0.5
for round in 1 2; do
	was="$(node_of rjtest0) $(node_of rjtest1)"
	rmdir "$configfs/rjtest0" "$configfs/rjtest1"
	sleep 0.5
	# The second time in the other order: each comes back as the other's iio:deviceN.
	if [ "$round" = 1 ]; then mkdir "$configfs/rjtest0" "$configfs/rjtest1"; else mkdir "$configfs/rjtest1" "$configfs/rjtest0"; fi
	now="$(node_of rjtest0) $(node_of rjtest1)"
	echo "round $round: $was removed, back as $now"
	[ "$round" = 1 ] || [ "$now" != "$was" ] || { echo "FAIL: the dummies came back under the same numbers"; exit 1; }
	flowing
done
moved=$now
clock=$(cat "/sys/bus/iio/devices/$(node_of rjtest1)/current_timestamp_clock")
[ "$clock" = boottime ] || { echo "FAIL: made came back on the $clock clock, not boottime (clock=keep)"; exit 1; }
sleep 0.5
kill -INT "$recorder"
wait "$recorder" || status=$?
[ "$status" = 0 ] || {
	cat "$FIELDCAP_TEST_TMP/rejoin.stderr"
	echo "FAIL: fieldcap exited $status; the IMUs came back each time (wanted 0)"
	exit 1
}
# The start line says each IMU is taken up again; the summary warns of each one's times away.
grep -o 'rjtest[01] ([^)]*), .*taken up again after it goes away ([^;]*' "$FIELDCAP_TEST_TMP/rejoin.stderr" \
	| sed 's/^\(rjtest[01]\).*\(taken up.*\)/\1: \2/'
for id in imu made; do
	grep "$id" "$FIELDCAP_TEST_TMP/rejoin.stderr" | grep -q 'went away 2 times and came back 2 times' \
		|| { cat "$FIELDCAP_TEST_TMP/rejoin.stderr"; echo "FAIL: no warning that $id went away twice"; exit 1; }
done
"$fieldcap" validate -q "$session"
/usr/bin/python3 - "$session" $moved <<'PY'
import json, sys
session = sys.argv[1]
moved = {"imu": sys.argv[2], "made": sys.argv[3]}
info = json.load(open(f"{session}/fieldcap.json"))
streams = {s["id"]: s for s in info["streams"]}
fails = []
for sid in ("imu", "made"):
    s = streams[sid]
    away = s.get("away", [])
    stamps = [json.loads(l) for l in open(f"{session}/{sid}.timestamps.jsonl")]
    times = [t["capture_ns"] for t in stamps]
    frames = [t["frame_number"] for t in stamps]
    iio = s["iio"]
    gaps = iio["timeline_gaps"]["samples_missing"]
    print(f"{sid}: {s['written']} written, drops {s['drops']['count']}, timeline gaps {gaps} in "
          f"{iio['timeline_gaps']['events']}, samples before start {iio['samples_before_start']}, "
          f"device {iio['device_id']}")
    if "ended_early" in s: fails.append(f"{sid} ended early: {s['ended_early']}")
    if len(away) != 2: fails.append(f"{sid}: {len(away)} times away, wanted 2")
    if s["drops"]["count"]: fails.append(f"{sid}: {s['drops']['count']} samples dropped by fieldcap")
    # Each time away is about a second: counted in the timeline, it would be ~100 samples each.
    if gaps >= 50: fails.append(f"{sid}: {gaps} samples missing from the timeline: the time away counted as gaps?")
    if any(b <= a for a, b in zip(times, times[1:])): fails.append(f"{sid}: capture_ns not increasing")
    if any(b <= a for a, b in zip(frames, frames[1:])): fails.append(f"{sid}: frame numbers not increasing")
    for n, a in enumerate(away):
        left, back = a["left_at"]["monotonic_raw_ns"], (a["returned_at"] or {}).get("monotonic_raw_ns")
        inside = [t for t in times if back and left < t < back]
        after = [i for i, t in enumerate(times) if back and t > back and (n + 1 == len(away)
                 or t < away[n + 1]["left_at"]["monotonic_raw_ns"])]
        jump = frames[after[0]] - frames[after[0] - 1] if after else None
        print(f"  away {n + 1}: {a['seconds']:.2f} s, back as {a['returned_as']}, {a['records_at_nominal_rate']} "
              f"samples' worth; {len(after)} samples after it (frame number {jump:+} across it)"
              if after else f"  away {n + 1}: {a}")
        if back is None: fails.append(f"{sid}: time away {n + 1} has no return: {a}")
        elif not after: fails.append(f"{sid}: no samples after return {n + 1}")
        elif jump > 5: fails.append(f"{sid}: frame numbers jump by {jump} across time away {n + 1}")
        # A sample stamped on the wrong clock after the return (realtime read as boottime) would
        # land decades on.
        elif times[after[0]] - times[after[0] - 1] > 5e9:
            fails.append(f"{sid}: capture_ns jumps {(times[after[0]] - times[after[0] - 1]) / 1e9:.1f} s across time away {n + 1}")
        if a.get("refused"): fails.append(f"{sid}: refused: {a['refused']}")
        if n == 1 and a.get("returned_as") != moved[sid]:
            fails.append(f"{sid} came back as {moved[sid]}, the sidecar says {a.get('returned_as')}")
        if inside: fails.append(f"{sid}: {len(inside)} samples inside time away {n + 1}")
cam = streams["cam"]
print(f"cam: {cam['written']} written, {'ended early' if 'ended_early' in cam else 'to the end'}")
if "ended_early" in cam or "away" in cam: fails.append("the camera did not record to the end")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
# The rig's dummy and trigger are as the other tests expect; the trigger fieldcap made is gone.
[ -n "$(node_of "$imu")" ] || { echo "FAIL: the rig's dummy $imu is gone"; exit 1; }
grep -qx "$trig" /sys/bus/iio/devices/trigger*/name || { echo "FAIL: the rig's trigger $trig is gone"; exit 1; }
if grep -q '^fieldcap-' /sys/bus/iio/devices/trigger*/name; then
	echo "FAIL: the trigger fieldcap made is still there"
	exit 1
fi
