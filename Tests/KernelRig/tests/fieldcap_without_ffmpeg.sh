#!/bin/bash
# rig-timeout: 150
# rig-share: 30
# A rig without FFmpeg: fieldcap writes and salvages its videos with libmatroska and never loads
# FFmpeg's libraries. With libavformat hidden (an empty file bind-mounted over it), a camera and
# IMU recording validates, `check` passes, and a recording killed mid-way is recovered with its
# video salvaged. With the library back, ffprobe reads both videos to their last frame.
set -euo pipefail
cam=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }

# awk reads to the end: leaving early would kill ldconfig with SIGPIPE, which pipefail reports.
library=$(ldconfig -p | awk '$1 == "libavformat.so.59" && !found { print $NF; found = 1 }')
[ -n "$library" ] || { echo "FAIL: no libavformat.so.59 in the guest to hide"; exit 1; }
empty=$FIELDCAP_TEST_TMP/empty.so
: >"$empty"
mount --bind "$empty" "$library"
trap 'umount "$library"' EXIT
if ffprobe -version >/dev/null 2>&1; then echo "FAIL: FFmpeg is not hidden"; exit 1; fi

devices=(--cam "$cam,size=320x180,fps=30,id=cam" --imu "$imu,rate=200,trigger=$trig,id=imu")
whole=$FIELDCAP_TEST_TMP/whole
"$fieldcap" "${devices[@]}" --duration 2s --out "$whole" -q
"$fieldcap" validate "$whole"

printf 'cameras:\n  - device: %s\n    size: 320x180\n    fps: 30\noutput: %s\n' "$cam" "$FIELDCAP_TEST_TMP" >"$FIELDCAP_TEST_TMP/rig.yaml"
"$fieldcap" check --config "$FIELDCAP_TEST_TMP/rig.yaml"

killed=$FIELDCAP_TEST_TMP/killed
"$fieldcap" "${devices[@]}" --duration 30s --out "$killed" -q &
pid=$!
for _ in $(seq 100); do
	[ -s "$killed/cam.timestamps.jsonl" ] && [ "$(wc -l <"$killed/cam.timestamps.jsonl")" -ge 30 ] && break
	sleep 0.1
done
sleep 0.5
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
if "$fieldcap" validate -q "$killed" 2>/dev/null; then echo "FAIL: a killed session validated before recover"; exit 1; fi
report=$("$fieldcap" recover "$killed")
echo "$report"
frames=$(awk '$1 == "cam:" { print $2 }' <<<"$report")
[ -n "$frames" ] && [ "$frames" -ge 30 ] || { echo "FAIL: recover kept ${frames:-no} frames of cam.mkv"; exit 1; }
"$fieldcap" validate "$killed"

umount "$library"
trap - EXIT
for video in "$whole/cam.mkv" "$killed/cam.mkv"; do
	read_frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$video")
	lines=$(wc -l <"${video%.mkv}.timestamps.jsonl")
	echo "$video: ffprobe reads $read_frames frames; $lines timestamp lines"
	[ "$read_frames" -ge "$lines" ] && [ "$lines" -gt 0 ] || { echo "FAIL: $video holds fewer frames than its timestamp lines"; exit 1; }
done
[ "$frames" = "$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$killed/cam.mkv")" ] ||
	{ echo "FAIL: recover's count and ffprobe's differ"; exit 1; }
echo "without FFmpeg: recorded, checked, killed and recovered"
