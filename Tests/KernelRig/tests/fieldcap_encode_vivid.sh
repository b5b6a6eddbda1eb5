#!/bin/bash
# rig-timeout: 300
# vivid's YUYV, GREY and NV12 frames recorded with encode=jpeg, judged by FFmpeg and GStreamer
# (Tests/FieldcapCLITests/Clients/encoded_check.py): every frame decodes, the timestamps stay
# frame-exact, and each frame's luma is within the PSNR floor of the raw picture. Both vivid
# devices show the same still colour bars (OSD text off, no movement): one records raw, the other
# encoded, in the same session.
set -euo pipefail
cam0=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
cam1=${FIELDCAP_VIDEO_DEVICE2:?the rig loads vivid with two devices}
fieldcap=$FIELDCAP_REPO/.build/debug/fieldcap
[ -x "$fieldcap" ] || { echo "no $fieldcap: run 'swift build' on the host first"; exit 1; }
check=$FIELDCAP_REPO/Tests/FieldcapCLITests/Clients/encoded_check.py
python=
for candidate in python3 "$HOME/.pyenv/shims/python3"; do
	if "$candidate" -c 'import numpy' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "FAIL: no python3 with numpy: run scripts/install-deps on the host"; exit 1; }
command -v gst-launch-1.0 >/dev/null || { echo "FAIL: no gst-launch-1.0: run scripts/install-deps on the host"; exit 1; }
for dev in "$cam0" "$cam1"; do
	v4l2-ctl -d "$dev" -c timestamp_source=1 -c osd_text_mode=2 -c horizontal_movement=3 -c vertical_movement=3
done
trap 'for dev in "$cam0" "$cam1"; do v4l2-ctl -d "$dev" -c osd_text_mode=0 -c timestamp_source=0 >/dev/null 2>&1 || true; done' EXIT

for format in YUYV GREY NV12; do
	session=$FIELDCAP_TEST_TMP/encode-$format
	"$fieldcap" --cam "$cam0,size=320x180,fps=30,id=raw,format=$format" \
		--cam "$cam1,size=320x180,fps=30,id=jpeg,format=$format,encode=jpeg" --duration 2s --out "$session" -q
	"$fieldcap" validate "$session"
	"$python" "$check" "$session" jpeg --reference raw --static-reference --psnr-floor 38
done
echo "PASS: vivid's YUYV, GREY and NV12 encoded as JPEG: every frame decoded by FFmpeg and GStreamer, frame-exact, above the PSNR floor"
