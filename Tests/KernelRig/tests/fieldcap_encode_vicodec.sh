#!/bin/bash
# rig-timeout: 420
# encode=fwht through vicodec, the kernel's virtual V4L2 memory-to-memory codec: the same code
# path a hardware H.264 encoder takes (the stateful encoder interface), judged by programs
# nobody here wrote (Tests/FieldcapCLITests/Clients/encoded_check.py): FFmpeg finds every packet,
# vicodec's own decoder (through v4l2-ctl) gives every frame back, frame-exact, its luma within
# the PSNR floor of the raw frame. Then the same through the multi-planar API (vicodec reloaded
# with multiplanar=1, as Raspberry Pi, Rockchip and Hantro encoders are), an encoder that goes
# away mid-recording, and encoder= naming what is not an encoder.
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
fail() { echo "FAIL: $*"; exit 1; }

# vicodec's nodes, by the names its driver gives them (they move when it is reloaded).
vicodec_node() {
	local d nm
	for d in /sys/class/video4linux/video*; do
		nm=; [ -r "$d/name" ] && read -r nm < "$d/name"
		[ "$nm" = "$1" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}
reload_vicodec() {
	rmmod vicodec
	modprobe vicodec "$@"
	encoder=$(vicodec_node stateful-encoder) && decoder=$(vicodec_node stateful-decoder) \
		|| fail "vicodec $* did not come back"
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

# vivid's still colour bars, raw on one device and FWHT on the other (the encoder found by
# fieldcap), in each 8-bit format both take.
for format in YUYV NV12 GREY; do
	session=$FIELDCAP_TEST_TMP/vivid-$format
	"$fieldcap" --cam "$cam0,size=640x480,fps=30,id=raw,format=$format" \
		--cam "$cam1,size=640x480,fps=30,id=fwht,format=$format,encode=fwht" --duration 2s --out "$session" -q
	"$fieldcap" validate "$session"
	"$python" "$check" "$session" fwht --reference raw --static-reference --psnr-floor 30 \
		--decoder-device "$decoder" --max-ring-drops 0
done

# A moving pattern, frame by frame: two synthetic cameras draw the same picture for the same
# sequence number; one is stored raw, the other goes through the encoder named by encoder=.
moving() {
	local session=$FIELDCAP_TEST_TMP/$1
	"$fieldcap" --cam "synthetic:640x480@30,id=raw,format=$2" \
		--cam "synthetic:640x480@30,id=fwht,format=$2,encode=fwht,encoder=$encoder" --duration 2s --out "$session" -q
	"$fieldcap" validate "$session"
	"$python" "$check" "$session" fwht --reference raw --psnr-floor 30 --decoder-device "$decoder" --max-ring-drops 0
}
moving synthetic-YUYV YUYV
moving synthetic-NV12 NV12

# The multi-planar buffer API.
reload_vicodec multiplanar=1
moving multiplanar-YUYV YUYV

# Killed (SIGKILL) while frames are inside the encoder: `fieldcap recover` keeps every complete
# coded frame, numbered exactly, and vicodec's decoder decodes them all.
for round in 1 2 3; do
	session=$FIELDCAP_TEST_TMP/killed-$round
	"$fieldcap" --cam "synthetic:640x480@30,id=fwht,encode=fwht" --imu synthetic:100 --out "$session" -q &
	recorder=$!
	for _ in $(seq 200); do [ -s "$session/fwht.timestamps.jsonl" ] && break; sleep 0.05; done
	sleep "$round"
	kill -KILL "$recorder"
	wait "$recorder" 2>/dev/null || true
	[ -s "$session/fwht.timestamps.jsonl" ] || fail "round $round: the recording never wrote a frame"
	"$fieldcap" recover "$session"
	"$fieldcap" validate -q "$session" || fail "round $round: the recovered session does not validate"
	"$python" "$check" "$session" fwht --decoder-device "$decoder"
done

# The encoder goes away mid-recording (its driver unbound, as a USB or PCIe encoder that drops
# off the bus): the recording stops with one line naming the encoder, and what was written
# before validates and decodes.
reload_vicodec
session=$FIELDCAP_TEST_TMP/encoder-gone
set +e
"$fieldcap" --cam "synthetic:640x480@30,id=fwht,encode=fwht,encoder=$encoder" --duration 20s --out "$session" -q \
	2> "$FIELDCAP_TEST_TMP/encoder-gone.err" &
pid=$!
sleep 3
echo vicodec.0 > /sys/bus/platform/drivers/vicodec/unbind
wait $pid
status=$?
set -e
cat "$FIELDCAP_TEST_TMP/encoder-gone.err"
[ "$status" -ne 0 ] || fail "the recording whose encoder went away exited 0"
grep -q "$encoder" "$FIELDCAP_TEST_TMP/encoder-gone.err" || fail "the error does not name the encoder $encoder"
echo vicodec.0 > /sys/bus/platform/drivers/vicodec/bind
encoder=$(vicodec_node stateful-encoder) && decoder=$(vicodec_node stateful-decoder) || fail "vicodec did not bind again"
"$fieldcap" validate "$session"
"$python" "$check" "$session" fwht --decoder-device "$decoder"

# encoder= naming a decoder or a camera: one line naming it, exit 64, no session.
for wrong in "$decoder" "$cam0"; do
	set +e
	message=$("$fieldcap" --cam "synthetic:640x480@30,encode=fwht,encoder=$wrong" --duration 1s \
		--out "$FIELDCAP_TEST_TMP/wrong" -q 2>&1)
	status=$?
	set -e
	echo "$message"
	[ "$status" -eq 64 ] || fail "encoder=$wrong exited $status, not 64"
	[ "$(printf '%s\n' "$message" | wc -l)" -eq 1 ] || fail "encoder=$wrong: more than one line"
	case "$message" in *"$wrong"*) ;; *) fail "encoder=$wrong: the error does not name $wrong" ;; esac
	[ ! -e "$FIELDCAP_TEST_TMP/wrong" ] || fail "encoder=$wrong left a session behind"
done
echo "PASS: FWHT through vicodec from vivid (YUYV, NV12, GREY) and a moving synthetic pattern (single- and multi-planar): every frame found by FFmpeg and decoded by vicodec, frame-exact, above the PSNR floor; 3 SIGKILLs recovered and decoded; an encoder gone mid-recording stops it with its name and leaves a valid session; encoder= on a decoder or camera refused"
