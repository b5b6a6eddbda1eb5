#!/bin/bash
# rig-timeout: 420
# vivid's YUYV, GREY, NV12 and Bayer (BA81, RGGB) frames recorded with encode=jpeg, and YUYV,
# GREY, NV12, Y16 and Bayer (GRBG) with encode=ffv1, judged by FFmpeg and GStreamer (Tests/FieldcapCLITests/Clients/encoded_check.py):
# every frame decodes, the timestamps stay frame-exact, each JPEG frame's luma is within the PSNR
# floor of the raw picture (a Bayer picture's luma as OpenCV demosaics it) and each FFV1 frame is
# the raw picture's bytes exactly. Both vivid
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

# Bayer's floor is lower: its demosaiced luma has a zipper along colour edges, which JPEG codes
# less well (EncodeCommandTests.bayerPSNRFloor).
for format in YUYV GREY NV12 BA81 RGGB; do
	session=$FIELDCAP_TEST_TMP/encode-$format
	floor=38
	case $format in BA81 | RGGB) floor=35 ;; esac
	"$fieldcap" --cam "$cam0,size=320x180,fps=30,id=raw,format=$format" \
		--cam "$cam1,size=320x180,fps=30,id=jpeg,format=$format,encode=jpeg" --duration 2s --out "$session" -q
	"$fieldcap" validate "$session"
	"$python" "$check" "$session" jpeg --reference raw --static-reference --psnr-floor $floor
done
# FFV1 is lossless: each frame FFmpeg and GStreamer decode is the raw picture's bytes exactly,
# 16-bit Y16 included.
for format in YUYV GREY NV12 Y16 GRBG; do
	session=$FIELDCAP_TEST_TMP/ffv1-$format
	"$fieldcap" --cam "$cam0,size=320x180,fps=30,id=raw,format=$format" \
		--cam "$cam1,size=320x180,fps=30,id=ffv1,format=$format,encode=ffv1" --duration 2s --out "$session" -q
	"$fieldcap" validate "$session"
	"$python" "$check" "$session" ffv1 --reference raw --static-reference
done
echo "PASS: vivid's YUYV, GREY, NV12, BA81 and RGGB encoded as JPEG: every frame decoded by FFmpeg and GStreamer, frame-exact, above the PSNR floor; YUYV, GREY, NV12, Y16 and GRBG as FFV1: every frame decoded bit-exact"
