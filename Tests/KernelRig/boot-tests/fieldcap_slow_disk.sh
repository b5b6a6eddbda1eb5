#!/bin/bash
# rig-timeout: 420
# A disk slower than the video (issue 28): in one boot, QEMU throttles the scratch disk's writes
# to 2 and then 20 MB/s (a disk that takes a twentieth of the video, then over half of it; a
# third rate between them, 8 MB/s, proved nothing these two do not and cost 50 s of the suite) (disk_monitor.py, through QEMU's monitor), and at each rate fieldcap
# records two 640x480 cameras at 30 fps (36.9 MB/s of raw video) and a 1 kHz IMU for 10 s,
# synthetic sources and then vivid with the IIO dummy (slow_disk_guest.py says what each session
# must show). The IMU loses nothing, the cameras drop frames and count them, each video holds
# exactly the frames its timestamps count, the session validates, and its files get most of the
# disk's rate. The figures are printed at the end.
set -euo pipefail
rig=${FIELDCAP_RIG:?run through Tests/KernelRig/rig test}
tmp=${FIELDCAP_TEST_TMP:?}
repo=${FIELDCAP_REPO:?}
here=$repo/Tests/KernelRig/boot-tests
# The binary a rig runs (scripts/build-release, which scripts/test runs before the kernel tests):
# the rates are a rig's, and it validates in seconds under emulation, not tens.
fieldcap=$repo/.build/release/fieldcap
[ -x "$fieldcap" ] || { echo "no $fieldcap: run scripts/build-release first"; exit 1; }
# Built after the last change to the sources: SwiftPM compiles a changed file again, but keeps
# an object (and the binary) that comes out the same, so the compiler's dependency files are
# what tell.
built=$(ls -t "$repo"/.build/release/*.build/*.d | sed -n 1p)
newer=$(find "$repo/Sources" -newer "$built" -type f -print -quit)
[ -z "$newer" ] || { echo "$newer changed after the last release build: run scripts/build-release first"; exit 1; }

/usr/bin/python3 "$here/disk_monitor.py" "$tmp/qmp.sock" "$tmp" > "$tmp/monitor.log" 2>&1 &
monitor=$!
trap 'kill "$monitor" 2>/dev/null || true' EXIT
status=0
"$rig" run --disk-throttle 2000000 --qmp "$tmp/qmp.sock" --share "$tmp" --timeout 400 -- \
	/usr/bin/python3 "$here/slow_disk_guest.py" throttle "$tmp" "$fieldcap" 2 20 || status=1
sed 's/^/disk monitor: /' "$tmp/monitor.log"
[ -f "$tmp/result-throttle.json" ] || exit 1
/usr/bin/python3 - "$tmp/result-throttle.json" <<'PY'
import json, sys
print("disk MB/s | sources | IMU written / dropped (ring at most) | cam0, cam1 written / dropped / skipped | video, all files MB/s")
for r in json.load(open(sys.argv[1])):
    cams = ", ".join(f"{r[c]['written']} / {r[c]['dropped']} / {r[c]['skipped']}" for c in ("cam0", "cam1"))
    print(f"{r['mbps']:g} | {r['kind']} | {r['imu_written']} / {r['imu_dropped']} ({r['imu_ring_max']}) | {cams} | {r['video_mbps']}, {r['session_mbps']}")
PY
exit $status
