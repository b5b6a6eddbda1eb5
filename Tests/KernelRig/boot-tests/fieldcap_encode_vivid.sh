#!/bin/bash
# rig-timeout: 420
# rig-share: 150
# vivid's YUYV, GREY, NV12 and Bayer (BA81, RGGB) frames recorded with encode=jpeg, and YUYV,
# GREY, NV12, Y16 and Bayer (GRBG) with encode=ffv1, judged by FFmpeg and GStreamer
# (Tests/FieldcapCLITests/Clients/encoded_check.py): every frame decodes, the timestamps stay
# frame-exact, each JPEG frame's luma is within the PSNR floor of the raw picture (a Bayer
# picture's luma as OpenCV demosaics it) and each FFV1 frame is the raw picture's bytes exactly.
# Both vivid devices show the same still colour bars (OSD text off, no movement): one records
# raw, the other encoded, in the same session.
#
# A boot test: the recordings (and the encoding, inside fieldcap) need the real driver, the
# decoders do not. One boot records the ten sessions onto the guest's ext4 disk and copies them
# to a shared folder; FFmpeg, GStreamer and the checks run here, at the host's speed (under
# emulation they were most of the test's 4-7 minutes).
set -euo pipefail
rig=${FIELDCAP_RIG:?run through Tests/KernelRig/rig test}
tmp=${FIELDCAP_TEST_TMP:?}
repo=${FIELDCAP_REPO:?}
fieldcap=${FIELDCAP_BIN:-$repo/.build/release/fieldcap}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it first (scripts/build-release, or swift build)"; exit 1; }
check=$repo/Tests/FieldcapCLITests/Clients/encoded_check.py
python=
for candidate in python3 "$HOME/.pyenv/shims/python3"; do
	if "$candidate" -c 'import numpy' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "FAIL: no python3 with numpy: run scripts/install-deps"; exit 1; }
command -v gst-launch-1.0 >/dev/null || { echo "FAIL: no gst-launch-1.0: run scripts/install-deps"; exit 1; }

jpeg_formats="YUYV GREY NV12 BA81 RGGB"
ffv1_formats="YUYV GREY NV12 Y16 GRBG"
cat > "$tmp/record.sh" <<'GUEST'
set -euo pipefail
fieldcap=$1 out=$2 jpeg_formats=$3 ffv1_formats=$4
cam0=$FIELDCAP_VIDEO_DEVICE cam1=${FIELDCAP_VIDEO_DEVICE2:?the rig loads vivid with two devices}
disk=$FIELDCAP_DISK_DIR
for dev in "$cam0" "$cam1"; do
	v4l2-ctl -d "$dev" -c timestamp_source=1 -c osd_text_mode=2 -c horizontal_movement=3 -c vertical_movement=3
done
record() { # record NAME FORMAT ENCODING
	"$fieldcap" --cam "$cam0,size=320x180,fps=30,id=raw,format=$2" \
		--cam "$cam1,size=320x180,fps=30,id=$3,format=$2,encode=$3" --duration 2s --out "$disk/$1" -q
	cp -a "$disk/$1" "$out/"
}
for format in $jpeg_formats; do record "encode-$format" "$format" jpeg; done
for format in $ffv1_formats; do record "ffv1-$format" "$format" ffv1; done
GUEST
"$rig" run --share "$tmp" --timeout 360 -- /bin/bash "$tmp/record.sh" "$fieldcap" "$tmp" "$jpeg_formats" "$ffv1_formats"

# Bayer's floor is lower: its demosaiced luma has a zipper along colour edges, which JPEG codes
# less well (EncodeCommandTests.bayerPSNRFloor).
for format in $jpeg_formats; do
	session=$tmp/encode-$format
	floor=38
	case $format in BA81 | RGGB) floor=35 ;; esac
	"$fieldcap" validate "$session"
	"$python" "$check" "$session" jpeg --reference raw --static-reference --psnr-floor $floor
done
# FFV1 is lossless: each frame FFmpeg and GStreamer decode is the raw picture's bytes exactly,
# 16-bit Y16 included.
for format in $ffv1_formats; do
	session=$tmp/ffv1-$format
	"$fieldcap" validate "$session"
	"$python" "$check" "$session" ffv1 --reference raw --static-reference
done
echo "PASS: vivid's YUYV, GREY, NV12, BA81 and RGGB encoded as JPEG: every frame decoded by FFmpeg and GStreamer, frame-exact, above the PSNR floor; YUYV, GREY, NV12, Y16 and GRBG as FFV1: every frame decoded bit-exact"
