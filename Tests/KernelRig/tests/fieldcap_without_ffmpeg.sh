#!/bin/bash
# rig-timeout: 120
# A rig without FFmpeg: fieldcap loads libavformat only to write or read a video, so with it
# missing (an empty file bind-mounted over it) an IMU recording, `list`, `validate` and
# `bench jitter` still work, and a camera recording is refused in one line that names the library
# and the package, exit 64, before anything is made. `check` reports the same as a FAIL line.
set -euo pipefail
cam=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=$FIELDCAP_REPO/.build/debug/fieldcap
[ -x "$fieldcap" ] || { echo "no $fieldcap: run 'swift build' on the host first"; exit 1; }

# awk reads to the end: leaving early would kill ldconfig with SIGPIPE, which pipefail reports.
library=$(ldconfig -p | awk '$1 == "libavformat.so.59" && !found { print $NF; found = 1 }')
[ -n "$library" ] || { echo "FAIL: no libavformat.so.59 in the guest to hide"; exit 1; }
empty=$FIELDCAP_TEST_TMP/empty.so
: >"$empty"
mount --bind "$empty" "$library"
trap 'umount "$library"' EXIT

session=$FIELDCAP_TEST_TMP/imu-only
"$fieldcap" --imu "$imu,rate=200,trigger=$trig,id=imu" --duration 2s --out "$session" -q
"$fieldcap" validate "$session"
"$fieldcap" list >/dev/null
"$fieldcap" bench jitter --cam "$cam,size=320x180,fps=30,id=cam" --duration 2s --report "$FIELDCAP_TEST_TMP/jitter" | tail -3

refused=$FIELDCAP_TEST_TMP/camera
set +e
err=$("$fieldcap" --cam "$cam,size=320x180,fps=30,id=cam" --duration 1s --out "$refused" -q 2>&1)
status=$?
set -e
echo "camera without FFmpeg: exit $status: $err"
[ "$status" = 64 ] || { echo "FAIL: exit $status, not 64"; exit 1; }
[ "$(wc -l <<<"$err")" = 1 ] || { echo "FAIL: not one line"; exit 1; }
grep -q "libavformat.so.59" <<<"$err" && grep -q "apt install libavformat59" <<<"$err" ||
	{ echo "FAIL: the error does not name the library and its package"; exit 1; }
[ ! -e "$refused" ] || { echo "FAIL: a refused recording made $refused"; exit 1; }

printf 'cameras:\n  - device: %s\n    size: 320x180\n    fps: 30\noutput: %s\n' "$cam" "$FIELDCAP_TEST_TMP" >"$FIELDCAP_TEST_TMP/rig.yaml"
set +e
report=$("$fieldcap" check --config "$FIELDCAP_TEST_TMP/rig.yaml" 2>&1)
status=$?
set -e
echo "$report"
[ "$status" = 1 ] && grep -q "^FAIL  video .*libavformat59" <<<"$report" || { echo "FAIL: check does not report the missing FFmpeg"; exit 1; }

umount "$library"
trap - EXIT
"$fieldcap" --cam "$cam,size=320x180,fps=30,id=cam" --duration 1s --out "$refused" -q
"$fieldcap" validate -q "$refused"
echo "with FFmpeg back, the camera records"
