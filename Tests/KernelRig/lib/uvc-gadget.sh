# A USB camera inside the guest, for the kernel tests to source: a UVC gadget (usb_f_uvc, with
# the rig's bulk patch) on dummy_hcd's device side, fed by tools/uvc-feeder.c, and enumerated on
# dummy_hcd's host side by the real USB core and the real uvcvideo, as a webcam is.
#
#   uvc_gadget_modules COUNT       load the modules, COUNT dummy controllers (one camera each)
#   uvc_gadget_create NAME SERIAL [CONTROLS]
#                                  a gadget in configfs with the feeder's modes; CONTROLS: the
#                                  camera terminal's bmControls (default 0: none; 8: exposure
#                                  time, which the feeder answers)
#   uvc_gadget_plug NAME INDEX LOG bind it to dummy_udc.INDEX, start its feeder (log to LOG), wait
#                                  for uvcvideo's node and print it (/dev/videoN)
#   uvc_gadget_unplug NAME         stop its feeder and unbind it: the camera is unplugged
#   uvc_gadget_remove NAME         unplug it and take it out of configfs
#
# Needs FIELDCAP_REPO (the rig sets it). The gadget's payload is 16 KiB, one URB of uvcvideo's.

UVC_GADGET_PAYLOAD=16384
UVC_CONFIGFS=/sys/kernel/config/usb_gadget

uvc_gadget_modules() {
	modprobe configfs
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	modprobe dummy_hcd num="${1:-1}"
	modprobe libcomposite
	# Loaded here, with its parameter: configfs would load it without one at the first mkdir.
	modprobe usb_f_uvc bulk_max_payload=$UVC_GADGET_PAYLOAD
	modprobe uvcvideo
	if [ ! -x /tmp/uvc-feeder ]; then
		gcc -O2 -o /tmp/uvc-feeder "$FIELDCAP_REPO/Tests/KernelRig/tools/uvc-feeder.c" -lturbojpeg \
			|| { echo "uvc-gadget: cannot build tools/uvc-feeder.c (gcc, libturbojpeg-dev)" >&2; return 1; }
	fi
}

# uvc_gadget_frame DIR WIDTH HEIGHT MAXBYTES INTERVAL...: one frame size of a format.
uvc_gadget_frame() {
	local d=$1/${2}x${3}
	mkdir "$d"
	echo "$2" >"$d/wWidth"
	echo "$3" >"$d/wHeight"
	echo "$4" >"$d/dwMaxVideoFrameBufferSize"
	echo $(($4 * 8 * 15)) >"$d/dwMinBitRate"
	echo $(($4 * 8 * 30)) >"$d/dwMaxBitRate"
	echo "$5" >"$d/dwDefaultFrameInterval"
	shift 4
	# One write with every interval: each write replaces the list (bash's printf writes a line at
	# a time, cat the whole file at once).
	printf '%s\n' "$@" >/tmp/uvc-gadget-intervals
	cat /tmp/uvc-gadget-intervals >"$d/dwFrameInterval"
}

uvc_gadget_create() {
	local name=$1 serial=$2 controls=${3:-0}
	local g=$UVC_CONFIGFS/$name f=$UVC_CONFIGFS/$name/functions/uvc.0
	mkdir "$g"
	echo 0x1d6b >"$g/idVendor"
	echo 0x0104 >"$g/idProduct"
	echo 0x0100 >"$g/bcdDevice"
	echo 0x0200 >"$g/bcdUSB"
	# Miscellaneous class with an interface association, as UVC devices declare themselves.
	echo 0xEF >"$g/bDeviceClass"
	echo 0x02 >"$g/bDeviceSubClass"
	echo 0x01 >"$g/bDeviceProtocol"
	mkdir "$g/strings/0x409"
	echo fieldcap >"$g/strings/0x409/manufacturer"
	echo "fieldcap test camera" >"$g/strings/0x409/product"
	echo "$serial" >"$g/strings/0x409/serialnumber"
	mkdir -p "$g/configs/c.1/strings/0x409"
	echo UVC >"$g/configs/c.1/strings/0x409/configuration"
	echo 100 >"$g/configs/c.1/MaxPower"
	mkdir "$f"
	# No camera or processing controls unless asked: the feeder answers only the exposure time
	# (bit 3); uvcvideo waits 5 s on each request nobody answers.
	echo "$controls" >"$f/control/terminal/camera/default/bmControls"
	echo 0 >"$f/control/processing/default/bmControls"
	mkdir "$f/control/header/h"
	ln -s "$f/control/header/h" "$f/control/class/fs/h"
	ln -s "$f/control/header/h" "$f/control/class/ss/h"
	mkdir "$f/streaming/uncompressed/yuyv" "$f/streaming/mjpeg/mjpeg"
	local kind width height bytes intervals
	# A pipe, not <(...): the guest has no /dev/fd.
	/tmp/uvc-feeder --modes | while read -r kind width height bytes intervals; do
		# shellcheck disable=SC2086
		uvc_gadget_frame "$f/streaming/$([ "$kind" = yuyv ] && echo uncompressed || echo mjpeg)/$kind" \
			"$width" "$height" "$bytes" $intervals
	done
	mkdir "$f/streaming/header/h"
	ln -s "$f/streaming/uncompressed/yuyv" "$f/streaming/header/h/yuyv"
	ln -s "$f/streaming/mjpeg/mjpeg" "$f/streaming/header/h/mjpeg"
	local class
	for class in fs hs ss; do ln -s "$f/streaming/header/h" "$f/streaming/class/$class/h"; done
	ln -s "$f" "$g/configs/c.1/uvc.0"
}

# uvc_gadget_host_node SERIAL: uvcvideo's capture node for the camera with this serial, if bound.
uvc_gadget_host_node() {
	local device node
	for device in /sys/bus/usb/devices/*; do
		[ "$(cat "$device/serial" 2>/dev/null)" = "$1" ] || continue
		for node in "$device"/*/video4linux/video*; do
			[ -e "$node" ] || continue
			# index 0 is the capture node; the metadata node beside it is index 1
			[ "$(cat "$node/index")" = 0 ] && { echo "/dev/${node##*/}"; return 0; }
		done
	done
	return 1
}

uvc_gadget_plug() {
	local name=$1 index=$2 log=$3
	local g=$UVC_CONFIGFS/$name serial gadget_node i
	serial=$(cat "$g/strings/0x409/serialnumber")
	echo "dummy_udc.$index" >"$g/UDC"
	gadget_node=$(ls -d /sys/class/udc/dummy_udc."$index"/gadget*/video4linux/video* 2>/dev/null | head -1)
	[ -n "$gadget_node" ] || { echo "uvc-gadget: $name has no output node on dummy_udc.$index" >&2; return 1; }
	# Its output away from the caller's: plug's output is the node, read through $(...).
	/tmp/uvc-feeder "/dev/${gadget_node##*/}" "$log" </dev/null >/dev/null 2>>"$log.stderr" &
	echo $! >"/tmp/uvc-feeder.$name.pid"
	# The feeder's subscription connects the gadget; uvcvideo's probe follows.
	for i in $(seq 1 ${UVC_GADGET_WAIT_TENTHS:-300}); do
		uvc_gadget_host_node "$serial" && return 0
		sleep 0.1
	done
	echo "uvc-gadget: uvcvideo bound no camera with serial $serial in $((${UVC_GADGET_WAIT_TENTHS:-300} / 10)) s" >&2
	echo "uvc-gadget: the feeder said:" >&2
	tail -5 "$log.stderr" >&2
	dmesg | tail -20 >&2
	return 1
}

# Safe in an EXIT trap under set -e: it never fails.
uvc_gadget_unplug() {
	local name=$1 pid i
	pid=$(cat "/tmp/uvc-feeder.$name.pid" 2>/dev/null) || return 0
	rm -f "/tmp/uvc-feeder.$name.pid"
	# The feeder first: unbinding waits until the gadget's node is closed. It is not this
	# shell's child when plug ran in $(...): wait for it by its /proc entry, 5 s at most.
	kill "$pid" 2>/dev/null || true
	for i in $(seq 50); do
		[ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null || break
		sleep 0.1
	done
	if [ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
		echo "uvc-gadget: the feeder of $name did not stop in 5 s (stuck in the kernel?): killed" >&2
		kill -9 "$pid" 2>/dev/null || true
	fi
	echo "" >"$UVC_CONFIGFS/$name/UDC" 2>/dev/null || true
}

uvc_gadget_remove() {
	local name=$1
	local g=$UVC_CONFIGFS/$name f=$UVC_CONFIGFS/$name/functions/uvc.0 link dir
	[ -d "$g" ] || return 0
	uvc_gadget_unplug "$name"
	{
		# configfs: links first, then directories, children before parents.
		rm -f "$g/configs/c.1/uvc.0" "$f"/streaming/class/*/h "$f"/control/class/*/h "$f"/streaming/header/h/*
		rmdir "$f/streaming/header/h" "$f/control/header/h"
		for dir in "$f"/streaming/uncompressed/* "$f"/streaming/mjpeg/*; do
			rmdir "$dir"/*x* "$dir"
		done
		rmdir "$f" "$g/configs/c.1/strings/0x409" "$g/configs/c.1" "$g/strings/0x409" "$g"
	} 2>/dev/null || echo "uvc-gadget: $name could not be taken out of configfs entirely" >&2
}
