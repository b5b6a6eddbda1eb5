#!/bin/bash
# rig-timeout: 240
# rig-share: 75
# The same short recording (vivid VGA and a synthetic IMU, 2 s) onto every file system a rig
# records to that the guest can make: its ext4 scratch disk; XFS, btrfs, f2fs, vfat (FAT32, an SD
# card's) and exFAT on loop devices; tmpfs; a 9p share (cache=none), the kind of file system on
# which a clean recording once lost most of its video (#43); FUSE (bindfs over ext4). Each: exit
# 0 and state complete, the start line names the file system and its write path,
# fieldcap.json's video_writes agrees (direct on ext4, XFS and f2fs, and on btrfs where statx
# reports its alignment; page cache elsewhere), the video holds every frame the sidecar counts (ffprobe) and its timestamp lines
# agree, no log holds a zero byte, and the session validates.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
disk=${FIELDCAP_DISK_DIR:?no scratch disk in this guest}
share=${FIELDCAP_RIG_RESULTS:?no 9p share in this guest}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
ext4=$(mktemp -d "$disk/fs.XXXXXX")
tmpfs=$(mktemp -d /tmp/fs.XXXXXX)
ninep=$(mktemp -d "$share/fs.XXXXXX")
images=$(mktemp -d "$disk/images.XXXXXX")
mounts=()
cleanup() {
	for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
	rm -rf "$ext4" "$tmpfs" "$ninep" "$images"
}
trap cleanup EXIT
[ "$(stat -f -c %T "$tmpfs")" = tmpfs ] || { echo "FAIL: $tmpfs is not tmpfs"; exit 1; }
grep -q " $share .* - 9p " /proc/self/mountinfo || { echo "FAIL: $share is not a 9p mount"; exit 1; }
# vfat needs its code pages (what a desktop mounts an SD card with).
modprobe -a loop xfs btrfs f2fs vfat nls_cp437 nls_ascii nls_iso8859-1 nls_utf8 exfat fuse || { echo "FAIL: a file system's module does not load"; exit 1; }

# Each block file system on a sparse image of its own (XFS's least is 300 MB), through a loop
# device; FUSE as bindfs over a directory of the ext4 disk.
declare -A dirs=([ext4]=$ext4 [tmpfs]=$tmpfs [9p]=$ninep)
for fs in xfs btrfs f2fs vfat exfat; do
	truncate -s 320M "$images/$fs.img"
	case $fs in
	xfs) mkfs.xfs -q -f "$images/$fs.img" ;;
	btrfs) mkfs.btrfs -q -f "$images/$fs.img" > /dev/null ;;
	f2fs) mkfs.f2fs -q -f "$images/$fs.img" > /dev/null ;;
	vfat) mkfs.vfat -F 32 "$images/$fs.img" > /dev/null ;;
	exfat) mkfs.exfat "$images/$fs.img" > /dev/null ;;
	esac
	mkdir -p "$images/$fs"
	mount -o loop "$images/$fs.img" "$images/$fs"
	mounts+=("$images/$fs")
	dirs[$fs]=$images/$fs
done
mkdir -p "$ext4/fuse-under" "$images/fuse"
bindfs "$ext4/fuse-under" "$images/fuse"
mounts=("$images/fuse" "${mounts[@]}")
dirs[fuse]=$images/fuse

for fs in ext4 xfs btrfs f2fs vfat exfat tmpfs 9p fuse; do
	dir=${dirs[$fs]}
	status=0
	"$fieldcap" --cam "$dev,size=640x480,fps=30,id=cam" --imu synthetic:100,id=imu --duration 2s --min-free 16M \
		--out "$dir/s" 2> "$images/stderr" > /dev/null || status=$?
	grep -m1 "^.*videos.* on $fs" "$images/stderr" | tr -d '\r' | sed 's/^\x1b\[K//' || true
	[ "$status" = 0 ] || { echo "FAIL: $fs: exit $status"; cat "$images/stderr"; exit 1; }
	# FUSE's mount type may carry the program's name (fuse.bindfs).
	grep -Eq "videos.* on $fs(\.[a-z]+)?[: ]" "$images/stderr" || { echo "FAIL: $fs: no start line naming it"; cat "$images/stderr"; exit 1; }
	probed=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 \
		"$dir/s/cam.mkv")
	python3 - "$dir/s" "$fs" "$probed" <<'PY'
import json, sys
session, fs, probed = sys.argv[1], sys.argv[2], int(sys.argv[3])
sidecar = json.load(open(session + "/fieldcap.json"))
cam = next(s for s in sidecar["streams"] if s["id"] == "cam")
# btrfs is coherent, but fieldcap writes directly only where statx reports the alignment
# (STATX_DIOALIGN), which the 6.12 kernel's btrfs does not: either is right there.
want = {"ext4": {"direct"}, "xfs": {"direct"}, "f2fs": {"direct"}, "btrfs": {"direct", "page cache"}}.get(fs, {"page cache"})
stamped = sum(1 for _ in open(session + "/cam.timestamps.jsonl", "rb"))
zeros = {name: open(f"{session}/{name}", "rb").read().count(b"\0")
         for name in ("cam.frames.ndjson", "cam.timestamps.jsonl", "imu.timestamps.jsonl", "imu.jsonl")}
print(f"{fs}: state {sidecar['state']}, video_writes {cam.get('video_writes')}, written {cam['written']}, "
      f"ffprobe {probed}, timestamp lines {stamped}, zero bytes in logs {sum(zeros.values())}")
problems = []
if sidecar["state"] != "complete": problems.append(f"state is {sidecar['state']}")
if cam.get("video_writes") not in want: problems.append(f"video_writes is {cam.get('video_writes')}, wanted {want}")
if cam["written"] < 10: problems.append(f"only {cam['written']} frames in 2 s")
if not (probed == stamped == cam["written"]): problems.append("the video, its lines and the sidecar disagree")
problems += [f"{name} holds {count} zero bytes" for name, count in zeros.items() if count]
for p in problems: print(f"FAIL: {fs}: {p}")
sys.exit(1 if problems else 0)
PY
	"$fieldcap" validate "$dir/s" > /dev/null || { echo "FAIL: $fs: the session does not validate"; exit 1; }
done
echo "ok: ext4, XFS, f2fs (direct), btrfs, vfat, exFAT, tmpfs, 9p and FUSE: every frame the sidecar counts is in the video"
