#!/bin/bash
# rig-timeout: 420
# A disk that stops for 3 s in the middle of a recording: the scratch disk runs at 8 MB/s, and
# the host (disk_monitor.py, through QEMU's monitor) throttles its writes to 1 byte a second for
# 3 s, then gives the 8 MB/s back. fieldcap records two 640x480 cameras at 30 fps and a 1 kHz IMU
# for 12 s, synthetic sources and then vivid with the IIO dummy; the guest asks for the stall 4 s
# in (slow_disk_guest.py). The IMU loses nothing (its ring never fills: its writer never waits
# for the disk), no camera is taken for stalled, every frame is accounted for, the session
# validates, and the status lines and fieldcap.json name the files that waited, and how long.
# Then the synthetic sources again in 3 s segments: the status lines, the stop line and the
# segments' fieldcap.json name the stalled files as SEGMENT/FILE, and no IMU sample is missing.
set -euo pipefail
rig=${FIELDCAP_RIG:?run through Tests/KernelRig/rig test}
tmp=${FIELDCAP_TEST_TMP:?}
repo=${FIELDCAP_REPO:?}
here=$repo/Tests/KernelRig/boot-tests
fieldcap=$repo/.build/release/fieldcap
[ -x "$fieldcap" ] || { echo "no $fieldcap: run scripts/build-release first"; exit 1; }
# See fieldcap_slow_disk.sh.
built=$(ls -t "$repo"/.build/release/*.build/*.d | sed -n 1p)
newer=$(find "$repo/Sources" -newer "$built" -type f -print -quit)
[ -z "$newer" ] || { echo "$newer changed after the last release build: run scripts/build-release first"; exit 1; }

/usr/bin/python3 "$here/disk_monitor.py" "$tmp/qmp.sock" "$tmp" > "$tmp/monitor.log" 2>&1 &
monitor=$!
trap 'kill "$monitor" 2>/dev/null || true' EXIT
status=0
"$rig" run --disk-throttle 8000000 --qmp "$tmp/qmp.sock" --share "$tmp" --timeout 360 -- \
	/usr/bin/python3 "$here/slow_disk_guest.py" stall "$tmp" "$fieldcap" 8 || status=1
sed 's/^/disk monitor: /' "$tmp/monitor.log"
exit $status
