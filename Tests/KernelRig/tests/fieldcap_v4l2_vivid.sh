#!/bin/bash
# rig-timeout: 90
# fieldcap against the real vivid driver: `fieldcap list` finds the camera and what it can do,
# and `--cam` names a non-camera node, a directory, a missing node and the vivid camera with one
# clear line and exit status 64 (this build lists V4L2 cameras; capture arrives with issue 5).
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
fieldcap=$FIELDCAP_REPO/.build/debug/fieldcap
[ -x "$fieldcap" ] || { echo "no $fieldcap: run 'swift build' on the host first"; exit 1; }

out=$("$fieldcap" list)
echo "$out" | head -20
for want in "$dev" "vivid" "YUYV" "640x480"; do
	grep -qF -- "$want" <<<"$out" || { echo "FAIL: 'fieldcap list' does not mention '$want'"; exit 1; }
done

expect_usage_error() { # expect_usage_error WANTED_TEXT ARGS...
	local want=$1; shift
	local err status=0
	err=$("$fieldcap" "$@" 2>&1 >/dev/null) || status=$?
	[ "$status" = 64 ] || { echo "FAIL: fieldcap $* exited $status, wanted 64: $err"; exit 1; }
	local first
	first=$(head -1 <<<"$err")
	grep -qF -- "$want" <<<"$first" || { echo "FAIL: fieldcap $*: first line '$first' lacks '$want'"; exit 1; }
	echo "ok: fieldcap $* -> $first"
}
expect_usage_error "not a V4L2 device" --cam /dev/null --duration 1s
expect_usage_error "a directory" --cam /dev --duration 1s
expect_usage_error "no such device" --cam /dev/video99 --duration 1s
expect_usage_error "not supported by this build yet" --cam "$dev" --duration 1s
