#!/bin/bash
# rig-timeout: 660
# rig-share: 200
# encode=fwht through vicodec, the kernel's virtual V4L2 memory-to-memory codec: the same code
# path a hardware H.264 encoder takes (the stateful encoder interface), judged by programs
# nobody here wrote (Tests/FieldcapCLITests/Clients/encoded_check.py): FFmpeg finds every packet,
# vicodec's own decoder (through v4l2-ctl) gives every frame back, frame-exact, its luma within
# the PSNR floor of the raw frame; vivid's frames reach it as DMABUF (vivid exports its buffers,
# vicodec imports them), a synthetic camera's copied once, a small one padded into vicodec's
# smallest picture. A recording in segments extracted from
# the middle of a GOP starts at its I-frame. Then the same through the multi-planar API (vicodec
# reloaded with multiplanar=1, as Raspberry Pi, Rockchip and Hantro encoders are), a SIGKILL
# recovered, an encoder that goes away mid-recording, and encoder= naming what is not an encoder.
set -euo pipefail
cam0=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
cam1=${FIELDCAP_VIDEO_DEVICE2:?the rig loads vivid with two devices}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
check=$FIELDCAP_REPO/Tests/FieldcapCLITests/Clients/encoded_check.py
# The interpreter itself, as the rig found it on the host (FIELDCAP_PYTHON), not pyenv's shim:
# the shim is a shell script that starts pyenv, 4 s a call in the emulated guest (10 s to find
# it here), and this test calls Python about fifteen times.
python=
for candidate in ${FIELDCAP_PYTHON:+"$FIELDCAP_PYTHON"} python3 "$HOME/.pyenv/shims/python3"; do
	python=$("$candidate" -c 'import sys, numpy; print(sys.executable)' 2>/dev/null) && break
	python=
done
[ -n "$python" ] || { echo "FAIL: no python3 with numpy: run scripts/install-deps on the host"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
# The sessions go to the scratch disk (ext4 on virtio), not through the 9p results share: a raw
# 640x480 twin writes 18 MB/s, which 9p on a busy host cannot take, and its drops would leave the
# encoded frames without the raw frames they are judged against.
out=${FIELDCAP_DISK_DIR:-$FIELDCAP_TEST_TMP}/vicodec
mkdir -p "$out"

# vicodec's nodes, by the names its driver gives them (they move when it is reloaded).
vicodec_node() {
	local d nm
	for d in /sys/class/video4linux/video*; do
		nm=; [ -r "$d/name" ] && read -r nm < "$d/name"
		[ "$nm" = "$1" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}
# vicodec's nodes after a reload or a bind: sysfs names them at once, devtmpfs makes the /dev
# nodes a moment later (a recording started in between found no /dev/video2).
find_vicodec() {
	local _
	for _ in $(seq 100); do
		encoder=$(vicodec_node stateful-encoder) && decoder=$(vicodec_node stateful-decoder) \
			&& [ -c "$encoder" ] && [ -c "$decoder" ] && return 0
		sleep 0.05
	done
	return 1
}
reload_vicodec() {
	rmmod vicodec
	modprobe vicodec "$@"
	find_vicodec || fail "vicodec $* did not come back"
}
encoder=${FIELDCAP_ENCODER_DEVICE:?the rig loads vicodec}
decoder=${FIELDCAP_DECODER_DEVICE:?the rig loads vicodec}
for dev in "$cam0" "$cam1"; do
	v4l2-ctl -d "$dev" -c timestamp_source=1 -c osd_text_mode=2 -c horizontal_movement=3 -c vertical_movement=3
done
trap 'for dev in "$cam0" "$cam1"; do v4l2-ctl -d "$dev" -c osd_text_mode=0 -c timestamp_source=0 >/dev/null 2>&1 || true; done
	[ -n "$(vicodec_node stateful-encoder)" ] || { rmmod vicodec 2>/dev/null; modprobe vicodec; } || true' EXIT

"$fieldcap" list | grep -E "^  fwht  vicodec \(vicodec\) at $encoder, V4L2 hardware, from .*YUYV" \
	|| fail "fieldcap list does not show vicodec's encoder at $encoder"

# How a session's camera reached its encoder, as fieldcap.json says.
input_of() {
	"$python" -c 'import json, sys
streams = json.load(open(sys.argv[1] + "/fieldcap.json"))["streams"]
print(next(s for s in streams if s["id"] == sys.argv[2])["encoding"]["input"])' "$1" "$2"
}

# vivid's still colour bars, raw on one device and FWHT on the other (the encoder found by
# fieldcap), in each 8-bit format both take. vivid exports its buffers and vicodec imports them:
# the frames reach the encoder as DMABUF, never copied.
# The encoder's path never makes capture drop (it drops its own frames, counted as the encoder's):
# the ring may lose two, no more, as a guest starved beside other work (a second guest, builds) once
# lost one in a 2 s recording with the encoder dropping none.
ring_drops=2
for format in YUYV NV12 GREY; do
	session=$out/vivid-$format
	"$fieldcap" --cam "$cam0,size=640x480,fps=30,id=raw,format=$format" \
		--cam "$cam1,size=640x480,fps=30,id=fwht,format=$format,encode=fwht" --duration 2s --out "$session" -q
	"$fieldcap" validate "$session"
	"$python" "$check" "$session" fwht --reference raw --static-reference --psnr-floor 30 \
		--decoder-device "$decoder" --max-ring-drops "$ring_drops"
	input=$(input_of "$session" fwht)
	[ "$input" = "DMABUF (the camera's buffers)" ] || fail "vivid $format reached vicodec $input, not as DMABUF"
done

# A moving pattern, frame by frame: two synthetic cameras draw the same picture for the same
# sequence number; one is stored raw, the other goes through the encoder named by encoder=.
moving() {
	local session=$out/$1
	"$fieldcap" --cam "synthetic:640x480@30,id=raw,format=$2" \
		--cam "synthetic:640x480@30,id=fwht,format=$2,encode=fwht,encoder=$encoder" --duration 2s --out "$session" -q
	"$fieldcap" validate "$session"
	"$python" "$check" "$session" fwht --reference raw --psnr-floor 30 --decoder-device "$decoder" --max-ring-drops "$ring_drops"
	# A synthetic camera's buffers are not a device's: each frame is copied once, into vicodec's.
	input=$(input_of "$session" fwht)
	[ "$input" = "copied into the encoder's buffers" ] || fail "a synthetic camera reached vicodec $input"
}
# (One format: vivid's NV12 and GREY above prove the formats; this proves the copy path.)
moving synthetic-YUYV YUYV

# A camera smaller than vicodec's smallest picture (640x360): vicodec takes a larger one (640x368
# for NV12), fieldcap pads each 320x240 frame into it (the edge repeated) and asks it to show
# 320x240 (vicodec's crop stops at its minimum, so the track is 640x360 with the camera's frame
# top-left, which the checker holds against the raw twin). The same path a 1080p H.264 encoder's
# 1088 lines take.
session=$out/padded
"$fieldcap" --cam "synthetic:320x240@30,id=raw,format=NV12" \
	--cam "synthetic:320x240@30,id=fwht,format=NV12,encode=fwht,encoder=$encoder" --duration 2s --out "$session" -q
"$fieldcap" validate "$session"
"$python" "$check" "$session" fwht --reference raw --psnr-floor 30 --decoder-device "$decoder" --max-ring-drops "$ring_drops"
input=$(input_of "$session" fwht)
case $input in "copied into the encoder's buffers, padded to "*) ;; *) fail "a 320x240 camera reached vicodec $input" ;; esac
echo "  a 320x240 NV12 camera: $input"

# A recording in segments, and a range of it that starts on a P-frame: the second segment's frame
# after its second I-frame, found in the file (FFmpeg's packet flags) and its timestamps. The
# extract must start at that I-frame instead, so its first packet is a keyframe, and vicodec
# decodes every frame, each still its raw twin's picture.
segmented=$out/segmented
"$fieldcap" --cam "synthetic:640x480@30,id=raw" \
	--cam "synthetic:640x480@30,id=fwht,encode=fwht,encoder=$encoder" --segment 3s --duration 7s --out "$segmented" -q
# (No process substitution: the guest has no /dev/fd.)
range=$("$python" - "$segmented" <<'PY'
import datetime, json, subprocess, sys
from pathlib import Path
recording = Path(sys.argv[1])
segment = recording / json.load(open(recording / "recording.json"))["segments"][1]["directory"]
sync = json.load(open(segment / "sync_point.json"))
stamps = [json.loads(line)["capture_ns"] for line in open(segment / "fwht.timestamps.jsonl") if line.strip()]
flags = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags",
                        "-of", "csv=p=0", str(segment / "fwht.mkv")], capture_output=True, text=True,
                       check=True).stdout.split()
keys = [i for i, f in enumerate(flags) if f.startswith("K")]
start = keys[1] + 1
assert not flags[start].startswith("K"), f"frame {start} is a keyframe too: {flags[:30]}"
def utc(ns, later=0.0):
    wall = (ns - sync["monotonic_ns"] + sync["wall_clock_ns"]) / 1e9 + later
    return datetime.datetime.fromtimestamp(wall, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
print(utc(stamps[start]), utc(stamps[start], 1.0), stamps[keys[1]])
PY
)
read -r from to keyframe_ns <<<"$range"
"$fieldcap" extract "$segmented" --from "$from" --to "$to" --out "$out/extract"
# Read whole, then cut: `| head -1` would stop reading early, and pipefail take ffprobe's SIGPIPE.
flags=$(ffprobe -v error -select_streams v:0 -show_entries packet=flags -of csv=p=0 "$out/extract/fwht.mkv")
first=${flags%%$'\n'*}
case $first in K*) ;; *) fail "the extract's first FWHT packet is not a keyframe (flags $first)" ;; esac
first_ns=$(head -1 "$out/extract/fwht.timestamps.jsonl" | "$python" -c 'import json, sys; print(json.load(sys.stdin)["capture_ns"])')
[ "$first_ns" = "$keyframe_ns" ] || fail "the extract starts at capture_ns $first_ns, not at the I-frame before the range ($keyframe_ns)"
"$python" "$check" "$out/extract" fwht --reference raw --psnr-floor 30 --decoder-device "$decoder"

# The multi-planar buffer API.
reload_vicodec multiplanar=1
moving multiplanar-YUYV YUYV

# Killed (SIGKILL) while frames are inside the encoder: `fieldcap recover` keeps every complete
# coded frame, numbered exactly, and vicodec's decoder decodes them all. (One kill: the kills at
# random moments are fieldcap_recover_after_kill's and fieldcap_power_cut's; this one is the
# encoder's path through recover, the same at any moment once frames flow.)
session=$out/killed
"$fieldcap" --cam "synthetic:640x480@30,id=fwht,encode=fwht" --imu synthetic:100 --out "$session" -q &
recorder=$!
for _ in $(seq 200); do [ -s "$session/fwht.timestamps.jsonl" ] && break; sleep 0.05; done
sleep 1.5
kill -KILL "$recorder"
wait "$recorder" 2>/dev/null || true
[ -s "$session/fwht.timestamps.jsonl" ] || fail "the killed recording never wrote a frame"
"$fieldcap" recover "$session"
"$fieldcap" validate -q "$session" || fail "the killed and recovered session does not validate"
"$python" "$check" "$session" fwht --decoder-device "$decoder"

# The encoder goes away mid-recording (its driver unbound, as a USB or PCIe encoder that drops
# off the bus): the recording stops with one line naming the encoder, and what was written
# before validates and decodes.
reload_vicodec
session=$out/encoder-gone
set +e
"$fieldcap" --cam "synthetic:640x480@30,id=fwht,encode=fwht,encoder=$encoder" --duration 20s --out "$session" -q \
	2> "$out/encoder-gone.err" &
pid=$!
# Unbound once frames are coming through it (a busy guest can take seconds to set up), so the
# fault is the one mid-recording and not one during setup.
for _ in $(seq 400); do [ -s "$session/fwht.timestamps.jsonl" ] && break; sleep 0.05; done
[ -s "$session/fwht.timestamps.jsonl" ] || { kill "$pid"; fail "the recording through $encoder never wrote a frame"; }
sleep 1
echo vicodec.0 > /sys/bus/platform/drivers/vicodec/unbind
wait $pid
status=$?
set -e
cat "$out/encoder-gone.err"
[ "$status" -ne 0 ] || fail "the recording whose encoder went away exited 0"
grep -q "$encoder" "$out/encoder-gone.err" || fail "the error does not name the encoder $encoder"
echo vicodec.0 > /sys/bus/platform/drivers/vicodec/bind
find_vicodec || fail "vicodec did not bind again"
"$fieldcap" validate "$session"
"$python" "$check" "$session" fwht --decoder-device "$decoder"

# encoder= naming a decoder or a camera: one line naming it, exit 64, no session.
for wrong in "$decoder" "$cam0"; do
	set +e
	message=$("$fieldcap" --cam "synthetic:640x480@30,encode=fwht,encoder=$wrong" --duration 1s \
		--out "$out/wrong" -q 2>&1)
	status=$?
	set -e
	echo "$message"
	[ "$status" -eq 64 ] || fail "encoder=$wrong exited $status, not 64"
	[ "$(printf '%s\n' "$message" | wc -l)" -eq 1 ] || fail "encoder=$wrong: more than one line"
	case "$message" in *"$wrong"*) ;; *) fail "encoder=$wrong: the error does not name $wrong" ;; esac
	[ ! -e "$out/wrong" ] || fail "encoder=$wrong left a session behind"
done
echo "PASS: FWHT through vicodec from vivid (YUYV, NV12, GREY, as DMABUF) and a moving synthetic pattern (an extract of it from mid-GOP starting at its I-frame) (single- and multi-planar): every frame found by FFmpeg and decoded by vicodec, frame-exact, above the PSNR floor; a SIGKILL recovered and decoded; an encoder gone mid-recording stops it with its name and leaves a valid session; encoder= on a decoder or camera refused"
