#!/bin/bash
# rig-timeout: 240
# rig-share: 60
# A rig set up the documented way, end to end, with the static release binary (scripts/build-release):
# systemd-udevd runs in the guest; deploy/install installs the binary, the udev rules (through
# `fieldcap install-udev`, which applies them to vivid and the IIO dummy), the group and user,
# the config and the systemd unit. Then: the owners, modes and attribute values udev set; the
# fieldcap user, with no other privilege, checks and records the rig config the way the unit's
# ExecStartPre and ExecStart do (IIO trigger made by fieldcap in configfs), and `systemctl stop`'s
# SIGTERM ends the recording: exit 0 and a session that validates.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
dev2=$FIELDCAP_VIDEO_DEVICE2 imu=$FIELDCAP_IIO_DEVICE sysfs=$FIELDCAP_IIO_DEVICE_SYSFS node=$FIELDCAP_IIO_DEVICE_NODE
trigger_sysfs=$FIELDCAP_IIO_TRIGGER_SYSFS
release=$FIELDCAP_REPO/.build/release/fieldcap
[ -x "$release" ] || { echo "no $release: run scripts/build-release on the host first"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }

# What this test changes, put back for the tests after it (same guest boot).
iio_files=$(cd "$sysfs" && ls -d buffer/enable buffer/length buffer/watermark buffer0/enable buffer0/length \
	buffer0/watermark scan_elements/*_en buffer0/*_en trigger/current_trigger sampling_frequency \
	*_sampling_frequency current_timestamp_clock 2>/dev/null || true)
saved=$(for f in "$dev" "$dev2" "$node"; do stat -c '%a %u:%g %n' "$f"; done
	for f in $iio_files; do stat -c '%a %u:%g %n' "$sysfs/$f"; done
	stat -c '%a %u:%g %n' "$trigger_sysfs/sampling_frequency" /sys/kernel/config/iio/triggers/hrtimer)
saved_clock=$(cat "$sysfs/current_timestamp_clock")
saved_trigger=$(cat "$sysfs/trigger/current_trigger")
service=
restore() {
	[ -z "$service" ] || { kill -KILL "$service" 2>/dev/null; wait "$service" 2>/dev/null; } || true
	# udevd stopped for good, and its control socket gone: the other tests run without udevd
	# (fieldcap takes the socket for a running udevd, as libudev does). `udevadm control --exit`
	# alone leaves it running a while, and the socket behind.
	udevadm control --exit >/dev/null 2>&1 || true
	pkill -x systemd-udevd 2>/dev/null || true
	for _ in $(seq 30); do pgrep -x systemd-udevd >/dev/null || break; sleep 0.1; done
	rm -rf /run/udev
	while read -r mode owner path; do chmod "$mode" "$path"; chown "$owner" "$path"; done <<<"$saved"
	echo "$saved_clock" > "$sysfs/current_timestamp_clock" || true
	echo "$saved_trigger" > "$sysfs/trigger/current_trigger" || true
}
trap restore EXIT

# A buffer a killed recorder (an earlier test) left enabled keeps the device's settings busy.
echo 0 > "$sysfs/buffer/enable"

# The static binary needs no Swift runtime.
if ldd "$release" | grep -E 'libswift|libFoundation|libdispatch'; then fail "the release binary links the Swift runtime"; fi
echo "release binary: $(stat -c %s "$release") bytes, no Swift runtime libraries"

# udevd first, so install-udev's reload and trigger apply the rules as on a running rig. The rig runs
# tests in a chroot, where udevadm ignores requests unless told not to.
export SYSTEMD_IGNORE_CHROOT=1
echo realtime > "$sysfs/current_timestamp_clock"
/lib/systemd/systemd-udevd --daemon
"$FIELDCAP_REPO/deploy/install" "$release"
[ "$(stat -c %a /etc/udev/rules.d/70-fieldcap.rules)" = 644 ] || fail "the rules file's mode"
systemd-analyze verify /etc/systemd/system/fieldcap.service || fail "systemd-analyze verify finds the unit faulty"
echo "systemd-analyze verify: the unit is sound"
cmp /etc/udev/rules.d/70-fieldcap.rules "$FIELDCAP_REPO/udev/70-fieldcap.rules" || fail "install-udev installed other rules than udev/70-fieldcap.rules"
for page in "$FIELDCAP_REPO"/man/*.1; do
	cmp "$page" "/usr/local/share/man/man1/${page##*/}" || fail "deploy/install did not install ${page##*/}"
done
echo "man pages: $(ls "$FIELDCAP_REPO"/man/*.1 | wc -l) installed in /usr/local/share/man/man1"

# What udev did.
check_group() { # check_group PATH MODE_PATTERN
	local got; got=$(stat -c '%G %A' "$1")
	echo "  $got $1"
	[[ $got == fieldcap\ $2 ]] || fail "$1 is '$got', wanted group fieldcap and mode $2"
}
echo "after udev:"
check_group "$dev" "crw-rw----"
check_group "$dev2" "crw-rw----"
check_group "$node" "crw-rw----"
for f in $iio_files; do check_group "$sysfs/$f" "-????w????"; done
check_group "$trigger_sysfs/sampling_frequency" "-????w????"
check_group /sys/kernel/config/iio/triggers/hrtimer "d???rwx???"
[ "$(cat "$sysfs/current_timestamp_clock")" = monotonic_raw ] || fail "current_timestamp_clock is $(cat "$sysfs/current_timestamp_clock"), not monotonic_raw"
name=$(cat "$sysfs/name")
[ "$(readlink -f "/dev/iio/by-name/$name")" = "$node" ] || fail "/dev/iio/by-name/$name does not lead to $node"
echo "  current_timestamp_clock monotonic_raw; /dev/iio/by-name/$name -> $node"

# Stable names: udev's own rules (60-persistent-v4l) link the cameras by port; fieldcap list shows
# the links, and the config names a camera by one. (vivid's two instances share one platform
# path, so one link stands for whichever came last; vicodec's nodes have links too, but they are
# encoders, not cameras.)
link=
for candidate in /dev/v4l/by-path/*; do
	target=$(readlink -f "$candidate")
	if [ "$target" = "$dev" ] || [ "$target" = "$dev2" ]; then link=$candidate; break; fi
done
[ -n "$link" ] || fail "udev made no /dev/v4l/by-path link to vivid's $dev or $dev2: $(ls -l /dev/v4l/by-path 2>&1)"
linked=$(readlink -f "$link")
listing=$(/usr/local/bin/fieldcap list)
grep -A1 "^  $linked " <<<"$listing" | grep -qF "stable names (for a rig config): $link" \
	|| fail "fieldcap list does not show $link under $linked: $(grep -A1 "^  $linked " <<<"$listing")"
echo "  fieldcap list: $linked, stable name $link"
other=$dev; [ "$linked" != "$dev" ] || other=$dev2

# The rig's config, and the user the unit runs as. No trigger attached: fieldcap makes one.
echo > "$sysfs/trigger/current_trigger"
mkdir -p /var/lib/fieldcap && chown fieldcap:fieldcap /var/lib/fieldcap   # the unit's StateDirectory
cat > /etc/fieldcap/rig.yaml <<YAML
host_id: rigtest
output: /var/lib/fieldcap/sessions
min_free: 16M
cameras:
  - device: $link
    id: cam_a
    size: 320x180
    fps: 30
  - device: $other
    id: cam_b
    size: 320x180
    fps: 15
imus:
  - device: $name
    id: imu
    rate: 200
YAML
as_service() { setpriv --reuid=fieldcap --regid=fieldcap --init-groups --inh-caps=-all -- env FIELDCAP_LOG=info "$@"; }
unit=/etc/systemd/system/fieldcap.service
pre=$(sed -n 's/^ExecStartPre=//p' "$unit") start=$(sed -n 's/^ExecStart=//p' "$unit")
echo "ExecStartPre: $pre"
as_service $pre
echo "ExecStart: $start"
cd /
# Not through the function: $! must be fieldcap itself (setpriv and env exec it), as for systemd.
setpriv --reuid=fieldcap --regid=fieldcap --init-groups --inh-caps=-all -- env FIELDCAP_LOG=info $start 2>"$FIELDCAP_TEST_TMP/journal" &
service=$!
session=
for _ in $(seq 200); do
	session=$(ls -d /var/lib/fieldcap/sessions/rigtest-* 2>/dev/null | head -1 || true)
	[ -n "$session" ] && [ -s "$session/imu.jsonl" ] && [ -s "$session/cam_b.timestamps.jsonl" ] && break
	sleep 0.1
done
[ -n "$session" ] || fail "no session under /var/lib/fieldcap/sessions"
sleep 3
kill -TERM "$service"    # what systemctl stop sends (KillSignal=SIGTERM)
status=0; wait "$service" || status=$?
sed 's/^/  journal: /' "$FIELDCAP_TEST_TMP/journal"
[ "$status" = 0 ] || fail "the service's fieldcap exited $status after SIGTERM"
grep -q "stopped by SIGTERM" "$FIELDCAP_TEST_TMP/journal" || fail "no summary naming SIGTERM in the journal"
/usr/local/bin/fieldcap validate "$session"
[ "$(stat -c %U "$session")" = fieldcap ] || fail "the session is not the fieldcap user's"
if [ -n "$(find "$session" -perm -o+w)" ]; then fail "world-writable files in the session"; fi
python3 - "$session" <<'PY'
import json, sys
info = json.load(open(f"{sys.argv[1]}/fieldcap.json"))
print("stop reason:", info.get("stop_reason"), "| streams:", ", ".join(s["id"] for s in info["streams"]))
imu = next(s for s in info["streams"] if s["id"] == "imu")["iio"]
print("IMU trigger:", imu["trigger"], "| time source:", imu["time_source"])
assert imu["time_source"].startswith("timestamp channel in monotonic_raw"), imu["time_source"]
PY
[ -z "$(ls /sys/kernel/config/iio/triggers/hrtimer/ | grep -i fieldcap || true)" ] || fail "fieldcap left its hrtimer trigger behind"
