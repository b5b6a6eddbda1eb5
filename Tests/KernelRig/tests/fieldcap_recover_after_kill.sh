#!/bin/bash
# rig-timeout: 720
# rig-share: 90
# SIGKILL at 5 random moments, one in each fifth of 0-3 s, while fieldcap records two vivid
# cameras and the IIO dummy: every session is completed by `fieldcap recover` and validates, each
# stream keeps all but the last second before the kill, each video holds exactly one frame per
# timestamp line (at most the frame being written when the kill came is cut), every video
# decodes, and the next recording finds the IMU usable again (the buffer the killed recorder left
# enabled is taken back), though not by a recording refused for a trigger that is not there.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
dev2=${FIELDCAP_VIDEO_DEVICE2:?}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
# The last round's recorder is killed with the IMU's buffer enabled, its trigger attached and its
# clock set: the device is left as it was found, for the tests after this one (iio_readdev
# cannot read a device whose buffer is enabled; fieldcap_iio_dummy, when run after it, checks
# that fieldcap puts back what it found and makes a trigger of its own when none is set).
imu_sysfs=${FIELDCAP_IIO_DEVICE_SYSFS:?}
found_trigger=$(cat "$imu_sysfs/trigger/current_trigger") found_clock=$(cat "$imu_sysfs/current_timestamp_clock")
put_back() {
	echo 0 > "$imu_sysfs/buffer/enable" || true
	echo "$found_trigger" > "$imu_sysfs/trigger/current_trigger" || true
	echo "$found_clock" > "$imu_sysfs/current_timestamp_clock" || true
}
trap put_back EXIT

# A round took about 22 s under TCG with a debug build (recover, validate and two ffprobes were
# most of it); the release build's rounds take about 12 s. The moments are drawn one in each
# fifth of 0-3 s (stratified), so 5 rounds cover the span as evenly as 8 independent draws; every
# kill's moment is random, and fieldcap_power_cut and fieldcap_encode_vicodec kill too. The
# sessions go to the scratch disk, not through 9p.
rounds=5
for round in $(seq 1 $rounds); do
	session=${FIELDCAP_DISK_DIR:-$FIELDCAP_TEST_TMP}/kill-$round
	"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam_a" --cam "$dev2,size=320x180,fps=30,id=cam_b" \
		--imu "$imu,rate=200,trigger=$trig,id=imu" --out "$session" -q 2>"$session.err" &
	recorder=$!
	for _ in $(seq 200); do [ -s "$session/imu.timestamps.jsonl" ] && break; sleep 0.05; done
	sleep "$(awk -v r="$RANDOM" -v n="$round" -v all="$rounds" 'BEGIN { printf "%.2f", (n - 1 + r / 32767) * 3 / all }')"
	killed_wall=$(date +%s%N)
	kill -KILL "$recorder"
	wait "$recorder" 2>/dev/null || true
	if [ ! -s "$session/imu.timestamps.jsonl" ]; then
		echo "FAIL: round $round: the recording never started: $(cat "$session.err")"; exit 1
	fi
	out=$("$fieldcap" recover "$session") || { echo "FAIL: round $round: recover: $out"; exit 1; }
	"$fieldcap" validate -q "$session" || { echo "FAIL: round $round does not validate"; exit 1; }
	/usr/bin/python3 - "$session" "$round" "$killed_wall" <<'PY'
import json, subprocess, sys
session, round_, killed_wall = sys.argv[1], sys.argv[2], int(sys.argv[3])
info = json.load(open(f"{session}/fieldcap.json"))
notes = info["recovery"]["streams"]
summary = []
# The kill in CLOCK_MONOTONIC_RAW, through the sync point's pair of clocks (the wall clock is not
# stepped here). Durable at least once a second: each stream keeps all but its last second (plus
# the moment the writer needs to take a record from its ring).
sync = json.load(open(f"{session}/sync_point.json"))
killed_raw = sync["monotonic_ns"] + (killed_wall - sync["wall_clock_ns"])
for stream in ("cam_a", "cam_b", "imu"):
    lines = open(f"{session}/{stream}.timestamps.jsonl").read().splitlines()
    last = json.loads(lines[-1])["capture_ns"] if lines else sync["monotonic_ns"]
    lost = (killed_raw - last) / 1e9
    if killed_raw - sync["monotonic_ns"] > 1.6e9 and lost > 1.5:
        sys.exit(f"FAIL: round {round_}: {stream}: the last line kept is {lost:.2f} s before the kill")
    summary.append(f"{stream} lost the last {max(0, lost):.2f} s")
for cam in ("cam_a", "cam_b"):
    stamps = sum(1 for _ in open(f"{session}/{cam}.timestamps.jsonl"))
    frames = notes[cam]["frames_in_video"]
    decoded = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                              "stream=nb_read_frames", "-of", "csv=p=0", f"{session}/{cam}.mkv"], capture_output=True, text=True)
    if decoded.returncode != 0 or decoded.stderr.strip() or decoded.stdout.strip() != str(frames):
        sys.exit(f"FAIL: round {round_}: {cam}.mkv: decoded {decoded.stdout.strip()} of {frames} frames; {decoded.stderr.strip()[:200]}")
    if stamps != frames:
        sys.exit(f"FAIL: round {round_}: {cam} has {stamps} timestamp lines for {frames} frames")
    # Each frame's log line is written right after it: the lines the kill took from the SyncField
    # writer's batch come back from the log, and at most the frame being written is cut.
    if notes[cam]["frames_cut"] > 1:
        sys.exit(f"FAIL: round {round_}: {cam}: {notes[cam]['frames_cut']} frames without a timestamp line cut from the video")
    summary.append(f"{cam} {frames} frames/{stamps} stamped/{notes[cam]['timestamp_lines_restored']} restored")
summary.append(f"imu {notes['imu']['samples']} samples")
print(f"round {round_}: " + ", ".join(summary))
PY
	rm -rf "$session"
done
# The last recorder died with the IMU's buffer enabled. A trigger that is not there is refused
# before fieldcap takes that buffer back: the device stays as the kill left it (exit 64).
status=0
err=$("$fieldcap" --imu "$imu,trigger=nosuchtrigger" --duration 1s --out "$FIELDCAP_TEST_TMP/never" 2>&1 >/dev/null) || status=$?
[ "$status" = 64 ] && grep -q "no such trigger" <<<"$err" || { echo "FAIL: a missing trigger: exit $status: $err"; exit 1; }
[ "$(cat "$imu_sysfs/buffer/enable")" = 1 ] || { echo "FAIL: a refused recording took the stale buffer back"; exit 1; }
echo "ok: with a stale buffer, $err"
