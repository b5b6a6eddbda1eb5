#!/bin/bash
# rig-timeout: 420
# A vivid + IIO dummy session exported: `fieldcap export --format mcap` (and `--rosbag2`) run in
# the guest on what the real drivers recorded, judged by the readers users run (the Python `mcap`
# library with mcap-ros2-support, and rosbags; Tests/FieldcapCLITests/Clients/export_check.py):
# every vivid frame equal to the Matroska file's as ffmpeg demuxes it, every stamp mapped through
# the sync point, the dummy's accel_x on /imu/imu (its missing axes NaN, no gyroscope marked
# unknown) and its voltage0 on /imu/channels, each value equal to the session's. Then the same
# session as a EuRoC folder (grey and colour) and an image folder, every PNG and JPEG read by
# OpenCV against vivid's frames (Tests/FieldcapCLITests/Clients/folder_check.py). Then vivid's
# 16-bit format exported as depth, and its Bayer mosaic (BA81) as bayer_bggr8 and as EuRoC PNGs
# held to OpenCV's demosaic.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=$FIELDCAP_REPO/.build/debug/fieldcap
[ -x "$fieldcap" ] || { echo "no $fieldcap: run 'swift build' on the host first"; exit 1; }
check=$FIELDCAP_REPO/Tests/FieldcapCLITests/Clients/export_check.py
# The readers are the host's pip packages (scripts/install-deps), under pyenv where it is used.
python=
for candidate in python3 "$HOME/.pyenv/shims/python3"; do
	if "$candidate" -c 'import mcap, mcap_ros2, rosbags, cv2, numpy, yaml' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "FAIL: no python3 with mcap, mcap_ros2, rosbags, cv2, numpy and yaml: run scripts/install-deps on the host"; exit 1; }
folders=$FIELDCAP_REPO/Tests/FieldcapCLITests/Clients/folder_check.py
v4l2-ctl -d "$dev" -c timestamp_source=1
trap 'v4l2-ctl -d "$dev" -c timestamp_source=0 >/dev/null 2>&1 || true' EXIT

session=$FIELDCAP_TEST_TMP/export-session
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" \
	--imu "$imu,rate=200,trigger=$trig,id=imu,channels=voltage0+accel_x" --duration 3s --out "$session" -q
"$fieldcap" export "$session" --format mcap --out "$FIELDCAP_TEST_TMP/vivid.mcap"
"$python" "$check" mcap "$session" "$FIELDCAP_TEST_TMP/vivid.mcap"
"$fieldcap" export "$session" --format mcap --rosbag2 --compression lz4 --out "$FIELDCAP_TEST_TMP/vivid_bag"
"$python" "$check" rosbag2 "$session" "$FIELDCAP_TEST_TMP/vivid_bag"
"$fieldcap" export "$session" --format euroc --out "$FIELDCAP_TEST_TMP/vivid_euroc"
"$python" "$folders" euroc "$session" "$FIELDCAP_TEST_TMP/vivid_euroc"
"$fieldcap" export "$session" --format euroc --colour --out "$FIELDCAP_TEST_TMP/vivid_euroc_rgb"
"$python" "$folders" euroc "$session" "$FIELDCAP_TEST_TMP/vivid_euroc_rgb" --colour
"$fieldcap" export "$session" --format images --out "$FIELDCAP_TEST_TMP/vivid_images"
"$python" "$folders" images "$session" "$FIELDCAP_TEST_TMP/vivid_images"

# Depth: vivid's 16-bit format (Y16; it has no Z16) named with --depth, as 16UC1 in MCAP and as
# 16-bit PNGs in mav0/depth0, each equal to the samples the driver gave.
depth=$FIELDCAP_TEST_TMP/export-depth
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=depth,format=Y16" \
	--imu "$imu,rate=200,trigger=$trig,id=imu,channels=accel_x" --duration 1s --out "$depth" -q
"$fieldcap" export "$depth" --format mcap --depth depth --out "$FIELDCAP_TEST_TMP/depth.mcap"
"$python" "$check" mcap "$depth" "$FIELDCAP_TEST_TMP/depth.mcap" --depth depth
"$fieldcap" export "$depth" --format euroc --depth depth --out "$FIELDCAP_TEST_TMP/depth_euroc"
"$python" "$folders" euroc "$depth" "$FIELDCAP_TEST_TMP/depth_euroc" --depth depth

# Bayer: the mosaic as it came in MCAP (bayer_bggr8), demosaiced in EuRoC's grey and colour PNGs.
bayer=$FIELDCAP_TEST_TMP/export-bayer
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam,format=BA81" \
	--imu "$imu,rate=200,trigger=$trig,id=imu,channels=accel_x" --duration 1s --out "$bayer" -q
"$fieldcap" export "$bayer" --format mcap --out "$FIELDCAP_TEST_TMP/bayer.mcap"
"$python" "$check" mcap "$bayer" "$FIELDCAP_TEST_TMP/bayer.mcap"
"$fieldcap" export "$bayer" --format euroc --out "$FIELDCAP_TEST_TMP/bayer_euroc"
"$python" "$folders" euroc "$bayer" "$FIELDCAP_TEST_TMP/bayer_euroc"
"$fieldcap" export "$bayer" --format euroc --colour --out "$FIELDCAP_TEST_TMP/bayer_euroc_rgb"
"$python" "$folders" euroc "$bayer" "$FIELDCAP_TEST_TMP/bayer_euroc_rgb" --colour
echo "PASS: a vivid + IIO dummy session exported to MCAP, a rosbag2 directory, EuRoC (grey, RGB) and an image folder, a vivid Y16 session as depth (16UC1, 16-bit PNG), and a vivid Bayer session as bayer_bggr8 and demosaiced EuRoC PNGs, read back equal"
