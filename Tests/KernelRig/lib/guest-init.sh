# Guest side of the kernel rig. Sourced by the initramfs /init (busybox sh,
# PID 1) from the control share, which the host fills at every run:
#   /ctl/config.sh   RIG_MODE (run|shell), RIG_ABI, RIG_IIO_DEVICE, RIG_IIO_TRIGGER,
#                    RIG_TERM, RIG_ROWS, RIG_COLS
#   /ctl/shares      "tag<TAB>absolute path" per read-write 9p export
#   /ctl/env.sh      environment for the command (sourced by cmd.sh)
#   /ctl/cmd.sh      the command (run mode)
# It writes back /ctl/stage (booted, ready), /ctl/status (the command's exit
# status) or /ctl/rig-error (one line: why the guest could not run it).
# Never exits: it always ends with poweroff -f.

. /ctl/config.sh
N=/newroot
TAB=$(printf '\t')

rig_stage() {
	local up
	read -r up _ < /proc/uptime
	echo "rig-guest: [$up s] $1"
	echo "$1" > /ctl/stage
}
rig_error() {
	echo "rig-guest: ERROR: $*"
	echo "$*" > /ctl/rig-error
	sync
	poweroff -f
	sleep 30
}
in_root() { chroot "$N" "$@"; }

rig_stage booted

# --- the host's / read-only, with a tmpfs overlay so the guest can write ---
mkdir -p /lower /rw
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostroot /lower \
	|| rig_error "cannot mount the host root (9p tag hostroot)"
mount -t tmpfs -o mode=0755 rigrw /rw && mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay "$N" \
	|| rig_error "cannot mount the overlay root"
mount -t proc proc "$N/proc"
mount -t sysfs sysfs "$N/sys"
mount -t devtmpfs devtmpfs "$N/dev"
mkdir -p "$N/dev/pts" "$N/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$N/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$N/dev/shm"
mount -t tmpfs -o mode=1777 tmpfs "$N/tmp"
mount -t tmpfs -o mode=0755 tmpfs "$N/run"
mkdir -p "$N/run/rig"
mount --bind /ctl "$N/run/rig"

# --- read-write exports at their host paths (parents first) and the module tree ---
while IFS="$TAB" read -r tag path; do
	[ -n "$tag" ] || continue
	in_root /bin/busybox mkdir -p "$path" \
		|| rig_error "cannot create mount point $path in the guest"
	in_root /bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 "$tag" "$path" \
		|| rig_error "cannot mount the 9p export $tag at $path"
done < /ctl/shares

rig_stage mounted
# --- drivers (the host's kmod modprobe handles Debian's .ko.xz) ---
in_root modprobe vivid n_devs=2 node_types=0x1,0x1 input_types=0x0,0x0 \
	|| rig_error "modprobe vivid failed"
# vicodec after vivid, so vivid keeps /dev/video0 and video1: its stateful FWHT encoder and
# decoder are the V4L2 memory-to-memory codec the encoder tests run against.
in_root modprobe vicodec || rig_error "modprobe vicodec failed"
in_root modprobe -a iio_dummy industrialio-sw-device iio-trig-hrtimer \
	|| rig_error "modprobe iio_dummy industrialio-sw-device iio-trig-hrtimer failed"
# gpio-sim (built by the rig): GPIO chips made through configfs, whose lines a test pulls up.
in_root modprobe gpio-sim || rig_error "modprobe gpio-sim failed"
in_root modprobe -a virtio_blk crc32c ext4 \
	|| rig_error "modprobe virtio_blk crc32c ext4 failed"
rig_stage modules-loaded
# The scratch disk (the host's rig made it: ext4 on the first virtio block device).
tries=0
while [ ! -b "$N/dev/vda" ] && [ $tries -lt 50 ]; do sleep 0.1; tries=$((tries + 1)); done
mkdir -p "$N/mnt/rig-disk"
mount -t ext4 "$N/dev/vda" "$N/mnt/rig-disk" || rig_error "cannot mount the scratch disk /dev/vda"
chmod 1777 "$N/mnt/rig-disk"
mount -t configfs configfs "$N/sys/kernel/config" \
	|| rig_error "cannot mount configfs"
mkdir "$N/sys/kernel/config/iio/devices/dummy/$RIG_IIO_DEVICE" \
	|| rig_error "cannot create the IIO dummy device $RIG_IIO_DEVICE"
mkdir "$N/sys/kernel/config/iio/triggers/hrtimer/$RIG_IIO_TRIGGER" \
	|| rig_error "cannot create the hrtimer trigger $RIG_IIO_TRIGGER"

iio_dev='' iio_trig='' video='' video2='' encoder='' decoder=''
for d in "$N"/sys/bus/iio/devices/*; do
	nm=
	[ -r "$d/name" ] && read -r nm < "$d/name"
	case "$nm" in
		"$RIG_IIO_DEVICE") iio_dev=${d#"$N"} ;;
		"$RIG_IIO_TRIGGER") iio_trig=${d#"$N"} ;;
	esac
done
for d in "$N"/sys/class/video4linux/video*; do
	nm=
	[ -r "$d/name" ] && read -r nm < "$d/name"
	case "$nm" in
		vivid-000*) video=/dev/${d##*/} ;;
		vivid-001*) video2=/dev/${d##*/} ;;
		stateful-encoder) encoder=/dev/${d##*/} ;;
		stateful-decoder) decoder=/dev/${d##*/} ;;
	esac
done
[ -n "$iio_dev" ] || rig_error "IIO device $RIG_IIO_DEVICE did not appear in /sys/bus/iio/devices"
[ -n "$iio_trig" ] || rig_error "IIO trigger $RIG_IIO_TRIGGER did not appear in /sys/bus/iio/devices"
[ -n "$video" ] || rig_error "no vivid video node in /sys/class/video4linux"
[ -e "$N$video" ] || rig_error "$video missing in devtmpfs"
[ -n "$encoder" ] && [ -n "$decoder" ] || rig_error "no vicodec stateful encoder and decoder in /sys/class/video4linux"

cat > /ctl/guest-env.sh <<EOT
export FIELDCAP_RIG=1
export FIELDCAP_VIDEO_DEVICE=$video
export FIELDCAP_VIDEO_DEVICE2=$video2
export FIELDCAP_ENCODER_DEVICE=$encoder
export FIELDCAP_DECODER_DEVICE=$decoder
export FIELDCAP_IIO_DEVICE=$RIG_IIO_DEVICE
export FIELDCAP_IIO_DEVICE_SYSFS=$iio_dev
export FIELDCAP_IIO_DEVICE_NODE=/dev/${iio_dev##*/}
export FIELDCAP_IIO_TRIGGER=$RIG_IIO_TRIGGER
export FIELDCAP_IIO_TRIGGER_SYSFS=$iio_trig
export FIELDCAP_DISK_DIR=/mnt/rig-disk
EOT

rig_stage ready
ENVI="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 TERM=$RIG_TERM"

case "$RIG_MODE" in
run)
	out='' err=''
	for p in /sys/class/virtio-ports/*; do
		nm=
		[ -r "$p/name" ] && read -r nm < "$p/name"
		case "$nm" in
			rig.stdout) out=/dev/${p##*/} ;;
			rig.stderr) err=/dev/${p##*/} ;;
		esac
	done
	[ -n "$out" ] && [ -n "$err" ] || rig_error "virtio-serial ports rig.stdout/rig.stderr not found"
	# shellcheck disable=SC2086
	chroot "$N" /usr/bin/env -i $ENVI /bin/sh /run/rig/cmd.sh < /dev/null > "$out" 2> "$err"
	echo "$?" > /ctl/status
	rig_stage finished
	;;
shell)
	echo "rig: guest ready ($video, IIO device $RIG_IIO_DEVICE at $iio_dev, trigger $RIG_IIO_TRIGGER)."
	echo "rig: 'exit' or Ctrl-D powers the guest off; Ctrl-A X kills it."
	# shellcheck disable=SC2086
	setsid -c chroot "$N" /usr/bin/env -i $ENVI /bin/bash --rcfile /run/rig/shellrc -i \
		<> /dev/ttyS0 >&0 2>&1
	echo "$?" > /ctl/status
	;;
*)
	rig_error "unknown RIG_MODE '$RIG_MODE'"
	;;
esac
sync
poweroff -f
sleep 30
