#!/bin/bash
# rig-timeout: 300
# rig-share: 90
# A vivid + IIO dummy session exported, judged by the readers users run (the Python `mcap` library
# with mcap-ros2-support, and rosbags; Tests/FieldcapCLITests/Clients/export_check.py): every vivid
# frame equal to the Matroska file's as ffmpeg demuxes it, every stamp mapped through the sync
# point, the dummy's accel_x on /imu/imu (its missing axes NaN, no gyroscope marked unknown) and its
# voltage0 on /imu/channels, each value equal to the session's. Then the same session as a EuRoC
# folder (grey and colour) and an image folder, every PNG and JPEG read by OpenCV against vivid's
# frames (Tests/FieldcapCLITests/Clients/folder_check.py). Then vivid's 16-bit format exported as
# depth, and its Bayer mosaic (BA81) as bayer_bggr8 and as EuRoC PNGs held to OpenCV's demosaic.
#
# A boot test: only the recordings need the real drivers, so one boot records the three sessions
# (onto the guest's ext4 disk, then copied to a shared folder) and the exports and their readers
# run here, on the host, at its own speed (they took 4-5 minutes under emulation).
set -euo pipefail
rig=${FIELDCAP_RIG:?run through Tests/KernelRig/rig test}
tmp=${FIELDCAP_TEST_TMP:?}
repo=${FIELDCAP_REPO:?}
fieldcap=${FIELDCAP_BIN:-$repo/.build/release/fieldcap}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it first (scripts/build-release, or swift build)"; exit 1; }
check=$repo/Tests/FieldcapCLITests/Clients/export_check.py
folders=$repo/Tests/FieldcapCLITests/Clients/folder_check.py
# The readers are the host's pip packages (scripts/install-deps), under pyenv where it is used.
python=
for candidate in python3 "$HOME/.pyenv/shims/python3"; do
	if "$candidate" -c 'import mcap, mcap_ros2, rosbags, cv2, numpy, yaml' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "FAIL: no python3 with mcap, mcap_ros2, rosbags, cv2, numpy and yaml: run scripts/install-deps"; exit 1; }

cat > "$tmp/record.sh" <<'GUEST'
set -euo pipefail
fieldcap=$1 out=$2
dev=$FIELDCAP_VIDEO_DEVICE imu=$FIELDCAP_IIO_DEVICE trig=$FIELDCAP_IIO_TRIGGER
disk=$FIELDCAP_DISK_DIR
v4l2-ctl -d "$dev" -c timestamp_source=1
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" \
	--imu "$imu,rate=200,trigger=$trig,id=imu,channels=voltage0+accel_x" --duration 3s --out "$disk/export-session" -q
# Depth: vivid's 16-bit format (Y16; it has no Z16), named with --depth when exported.
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=depth,format=Y16" \
	--imu "$imu,rate=200,trigger=$trig,id=imu,channels=accel_x" --duration 1s --out "$disk/export-depth" -q
# Bayer: the mosaic as it came.
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam,format=BA81" \
	--imu "$imu,rate=200,trigger=$trig,id=imu,channels=accel_x" --duration 1s --out "$disk/export-bayer" -q
for session in export-session export-depth export-bayer; do
	"$fieldcap" validate -q "$disk/$session"
	cp -a "$disk/$session" "$out/"
done
GUEST
"$rig" run --share "$tmp" --timeout 240 -- /bin/bash "$tmp/record.sh" "$fieldcap" "$tmp"

session=$tmp/export-session
"$fieldcap" validate -q "$session"
"$fieldcap" export "$session" --format mcap --out "$tmp/vivid.mcap"
"$python" "$check" mcap "$session" "$tmp/vivid.mcap"
"$fieldcap" export "$session" --format mcap --rosbag2 --compression lz4 --out "$tmp/vivid_bag"
"$python" "$check" rosbag2 "$session" "$tmp/vivid_bag"
"$fieldcap" export "$session" --format euroc --out "$tmp/vivid_euroc"
"$python" "$folders" euroc "$session" "$tmp/vivid_euroc"
"$fieldcap" export "$session" --format euroc --colour --out "$tmp/vivid_euroc_rgb"
"$python" "$folders" euroc "$session" "$tmp/vivid_euroc_rgb" --colour
"$fieldcap" export "$session" --format images --out "$tmp/vivid_images"
"$python" "$folders" images "$session" "$tmp/vivid_images"

# Depth: 16UC1 in MCAP and 16-bit PNGs in mav0/depth0, each equal to the samples the driver gave.
depth=$tmp/export-depth
"$fieldcap" export "$depth" --format mcap --depth depth --out "$tmp/depth.mcap"
"$python" "$check" mcap "$depth" "$tmp/depth.mcap" --depth depth
"$fieldcap" export "$depth" --format euroc --depth depth --out "$tmp/depth_euroc"
"$python" "$folders" euroc "$depth" "$tmp/depth_euroc" --depth depth

# Bayer: the mosaic as it came in MCAP (bayer_bggr8), demosaiced in EuRoC's grey and colour PNGs.
bayer=$tmp/export-bayer
"$fieldcap" export "$bayer" --format mcap --out "$tmp/bayer.mcap"
"$python" "$check" mcap "$bayer" "$tmp/bayer.mcap"
"$fieldcap" export "$bayer" --format euroc --out "$tmp/bayer_euroc"
"$python" "$folders" euroc "$bayer" "$tmp/bayer_euroc"
"$fieldcap" export "$bayer" --format euroc --colour --out "$tmp/bayer_euroc_rgb"
"$python" "$folders" euroc "$bayer" "$tmp/bayer_euroc_rgb" --colour
echo "PASS: a vivid + IIO dummy session exported to MCAP, a rosbag2 directory, EuRoC (grey, RGB) and an image folder, a vivid Y16 session as depth (16UC1, 16-bit PNG), and a vivid Bayer session as bayer_bggr8 and demosaiced EuRoC PNGs, read back equal"
