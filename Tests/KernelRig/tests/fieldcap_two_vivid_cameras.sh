#!/bin/bash
# rig-timeout: 150
# rig-share: 20
# Two vivid cameras and a synthetic IMU recorded at once: the session validates and each video
# holds exactly the frames its timestamps file stamps.
set -euo pipefail
cam0=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
cam1=${FIELDCAP_VIDEO_DEVICE2:?the rig loads vivid with two devices}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
for dev in "$cam0" "$cam1"; do v4l2-ctl -d "$dev" -c timestamp_source=1; done

session=$FIELDCAP_TEST_TMP/two
"$fieldcap" --cam "$cam0,size=320x180,fps=30,id=left" --cam "$cam1,size=320x180,fps=30,id=right" \
	--imu synthetic:200,id=imu --duration 4s --out "$session" -q
"$fieldcap" validate "$session"
for id in left right; do
	frames=$(wc -l < "$session/$id.timestamps.jsonl")
	probed=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$session/$id.mkv")
	echo "$id: $frames frames stamped, $probed in the video"
	[ "$frames" = "$probed" ] || { echo "FAIL: $id.mkv does not hold the stamped frames"; exit 1; }
	[ "$frames" -ge 60 ] || { echo "FAIL: only $frames frames from $id in 4 s at 30 fps"; exit 1; }
done
