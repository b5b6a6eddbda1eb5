#!/bin/bash
# rig-timeout: 120
# rig-share: 20
# fieldcap needs no root: an unprivileged user (nobody, no groups) records synthetic sources
# into a session that validates. Without the device permissions the udev rules grant, it says
# what is missing and what to do, in one line with exit status 64: for a camera node it may not
# open, and for an IIO device whose sysfs attributes it may not write.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
work=$(mktemp -d /tmp/unprivileged.XXXXXX)
chmod 0777 "$work"
mode=$(stat -c %a "$dev") owner=$(stat -c %u:%g "$dev")
trap 'rm -rf "$work"; chmod "$mode" "$dev"; chown "$owner" "$dev"' EXIT
# The shared folders are root's: nobody reads the binary from a copy with its libraries' path.
cp "$fieldcap" "$work/fieldcap"; chmod 0755 "$work/fieldcap"

as_nobody "$work/fieldcap" --cam synthetic:160x120@30 --imu synthetic:100 --duration 1s --out "$work/session" -q
as_nobody "$work/fieldcap" validate "$work/session"
echo "owner of the session: $(stat -c %U "$work/session")"

chmod 0660 "$dev"; chown root:video "$dev"
expect_denied() { # expect_denied WANTED ARGS...
	local want=$1; shift
	local err status=0
	err=$(as_nobody "$work/fieldcap" "$@" --duration 1s --out "$work/denied" 2>&1) || status=$?
	echo "exit $status: $err"
	[ "$status" = 64 ] || { echo "FAIL: wanted exit status 64"; exit 1; }
	[ "$(wc -l <<<"$err")" = 1 ] || { echo "FAIL: more than one line"; exit 1; }
	grep -q -- "$want" <<<"$err" || { echo "FAIL: the message does not say '$want'"; exit 1; }
	[ ! -e "$work/denied" ] || { echo "FAIL: a session directory was left behind"; exit 1; }
}
expect_denied "udev" --cam "$dev"
expect_denied "udev" --imu "$imu,rate=100"
