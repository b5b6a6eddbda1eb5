#!/bin/bash
# rig-timeout: 300
# rig-share: 90
# Faces through a real capture driver (#48): scikit-image's astronaut photograph, passing across
# a rendered scene, is played into vivid's video output and comes out of its capture node through
# the S-Video loopback (vivid's scalers on the way: PAL's 720x576 out, 360x288 back); fieldcap
# records the capture node, and `export --blur-faces` covers the faces (looking at every 4th
# frame, carrying them between and back). Judged by Debian's OpenCV
# Haar cascade (Tests/FieldcapCLITests/Clients/faces_check.py, another detector than fieldcap's):
# every face it finds in the plain export is gone from the covered one, and every pixel outside
# the covered boxes is the plain export's, bit for bit. The frames captured before the scene
# plays hold no face and need no box. vivid is reloaded as the other tests have it afterwards.
set -euo pipefail
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
: "${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}"
tools=$FIELDCAP_REPO/Tests/KernelRig/tools
astronaut=/usr/lib/python3/dist-packages/skimage/data/astronaut.png
[ -f "$astronaut" ] || { echo "FAIL: no $astronaut: install Debian's python3-skimage (scripts/install-deps)"; exit 1; }
. "$FIELDCAP_REPO/Tests/KernelRig/lib/vivid-loopback.sh"
v4l2-ctl -d "$cap" -i 2 -c s_video_000_0_is_connected_to=2 -c osd_text_mode=2 \
	--set-fmt-video=width=360,height=288,pixelformat=GREY,field=interlaced
v4l2-ctl -d "$out" -o 0 --set-fmt-video-out=width=360,height=288,pixelformat=GREY,field=interlaced

work=$FIELDCAP_TEST_TMP/faces-vivid
mkdir -p "$work"
# The photograph at 256x256 (its face about 70 pixels across), passing across 2 s of the scene.
/usr/bin/python3 -c 'import cv2, sys; cv2.imwrite(sys.argv[2], cv2.resize(cv2.imread(sys.argv[1]), (256, 256)))' \
	"$astronaut" "$work/face.png"
"$fieldcap" --cam "synthetic:360x288@25,format=GREY,picture=$work/face.png,id=scene" \
	--duration 2s --out "$work/rendered" -q
ffmpeg -v error -i "$work/rendered/scene.mkv" -fps_mode passthrough -f rawvideo -pix_fmt gray "$work/rendered.raw"
session=$work/session
/usr/bin/python3 "$tools/vivid_loopback.py" "$work/rendered.raw" "$work/rendered/scene.timestamps.jsonl" "$out" \
	360 288 -- "$fieldcap" --cam "$cap,id=cam,size=360x288,format=GREY" --duration 60s --out "$session" -q \
	>"$work/played.json"
/usr/bin/python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p.pop("shows"); print("played:", p)' \
	"$work/played.json"
"$fieldcap" validate -q "$session"
"$fieldcap" export "$session" --format euroc --out "$work/plain" >/dev/null
# The detector looks at every 4th frame (it takes a tenth of a second a frame under emulation);
# the faces are carried between, and back from where each is first found.
"$fieldcap" export "$session" --format euroc --blur-faces --face-detect-every 4 --out "$work/covered" | grep "faces covered"
/usr/bin/python3 "$FIELDCAP_REPO/Tests/FieldcapCLITests/Clients/faces_check.py" euroc "$work/plain" "$work/covered" --some
echo "PASS: faces played through vivid's loopback are covered on export"
