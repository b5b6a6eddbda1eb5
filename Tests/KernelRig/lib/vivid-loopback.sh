# Sourced by kernel tests that play frames through vivid's S-Video loopback: reloads vivid with a
# capture and an output node (node_types=0x101), sets $cap and $out to them, and on exit loads
# vivid again as the other tests have it ($FIELDCAP_VIDEO_DEVICE back). Fails the test when the
# nodes do not appear.
vivid_loopback_restore() {
	set +e
	rmmod vivid 2>/dev/null
	modprobe vivid n_devs=2 node_types=0x1,0x1 input_types=0x0,0x0
	for _ in $(seq 50); do [ -e "$FIELDCAP_VIDEO_DEVICE" ] && break; sleep 0.1; done
}
trap vivid_loopback_restore EXIT
for _ in $(seq 50); do rmmod vivid 2>/dev/null && break; sleep 0.1; done
modprobe vivid n_devs=1 node_types=0x101
vivid_loopback_node() {
	for n in /sys/class/video4linux/video*; do
		if [ "$(cat "$n/name")" = "$1" ]; then echo "/dev/${n##*/}"; fi
	done
}
for _ in $(seq 50); do
	cap=$(vivid_loopback_node vivid-000-vid-cap) out=$(vivid_loopback_node vivid-000-vid-out)
	if [ -n "$cap" ] && [ -n "$out" ]; then break; fi
	sleep 0.1
done
[ -n "$cap" ] && [ -n "$out" ] || { echo "FAIL: vivid's capture and output nodes did not appear"; exit 1; }
