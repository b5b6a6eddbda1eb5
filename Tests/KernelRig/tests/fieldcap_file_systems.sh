#!/bin/bash
# rig-timeout: 240
# rig-share: 150
# The same short recording (vivid VGA, a synthetic camera encoded as JPEG and a synthetic IMU,
# 2 s in 1 s segments) onto every file system a rig records to that the guest can make: its ext4
# scratch disk; XFS, btrfs, f2fs, vfat (FAT32, an SD card's) and exFAT on loop devices; tmpfs; a
# 9p share (cache=none), the kind of file system on which a clean recording once lost most of its
# video (#43); FUSE (bindfs over ext4). Each: exit 0 and state complete, the start line names the
# file system and its write path, fieldcap.json's video_writes agrees (direct on ext4, XFS and
# f2fs, and on btrfs where statx reports its alignment; page cache elsewhere), each segment's
# videos hold every frame its sidecar counts (ffprobe) and their timestamp lines agree, no log
# holds a zero byte, and the recording validates; on vfat, a recording without segments is warned
# of FAT's 4 GiB file limit at start. 9p's other cache modes are not here: a virtio
# 9p tag mounts once, and the guest's share is mounted already. Its share is long for one
# test (about 145 s, with a release build as without): nine file systems, five of them made on
# the spot, each recording read back with ffprobe segment by segment under TCG.
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
	"$fieldcap" --cam "$dev,size=640x480,fps=30,id=cam" --cam synthetic:320x240@30,id=enc,encode=jpeg \
		--imu synthetic:100,id=imu --duration 2s --segment 1s --min-free 16M \
		--out "$dir/s" 2> "$images/stderr" > /dev/null || status=$?
	grep -m1 "^.*videos.* on $fs" "$images/stderr" | tr -d '\r' | sed 's/^\x1b\[K//' || true
	[ "$status" = 0 ] || { echo "FAIL: $fs: exit $status"; cat "$images/stderr"; exit 1; }
	# FUSE's mount type may carry the program's name (fuse.bindfs).
	grep -Eq "videos.* on $fs(\.[a-z]+)?[: ]" "$images/stderr" || { echo "FAIL: $fs: no start line naming it"; cat "$images/stderr"; exit 1; }
	python3 - "$dir/s" "$fs" <<'PY'
import json, os, subprocess, sys
recording, fs = sys.argv[1], sys.argv[2]
# btrfs is coherent, but fieldcap writes directly only where statx reports the alignment
# (STATX_DIOALIGN), which the 6.12 kernel's btrfs does not: either is right there.
want = {"ext4": {"direct"}, "xfs": {"direct"}, "f2fs": {"direct"}, "btrfs": {"direct", "page cache"}}.get(fs, {"page cache"})
index = json.load(open(recording + "/recording.json"))
problems, counts, writes, zeros = [], {"cam": 0, "enc": 0}, set(), 0
for segment in index["segments"]:
    session = f"{recording}/{segment['directory']}"
    sidecar = json.load(open(session + "/fieldcap.json"))
    if sidecar["state"] != "complete": problems.append(f"{segment['directory']}: state is {sidecar['state']}")
    for id in ("cam", "enc"):
        stream = next(s for s in sidecar["streams"] if s["id"] == id)
        probed = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                 "stream=nb_read_frames", "-of", "csv=p=0", f"{session}/{id}.mkv"],
                                capture_output=True, text=True).stdout.strip()
        stamped = sum(1 for _ in open(f"{session}/{id}.timestamps.jsonl", "rb"))
        if not (probed == str(stamped) and stamped == stream["written"]):
            problems.append(f"{segment['directory']}/{id}: ffprobe {probed!r}, {stamped} lines, sidecar {stream['written']}")
        counts[id] += stream["written"]
        if id == "cam": writes.add(stream.get("video_writes"))
    for name in ("cam.frames.ndjson", "cam.timestamps.jsonl", "enc.timestamps.jsonl", "imu.timestamps.jsonl", "imu.jsonl"):
        zeros += open(f"{session}/{name}", "rb").read().count(b"\0")
print(f"{fs}: {len(index['segments'])} segments, state {index['state']}, video_writes {sorted(writes)}, "
      f"cam {counts['cam']} frames, enc (JPEG) {counts['enc']}, each in its video and its lines, zero bytes in logs {zeros}")
if index["state"] != "complete": problems.append(f"the recording's state is {index['state']}")
if not writes <= want: problems.append(f"video_writes {sorted(writes)}, wanted {sorted(want)}")
if counts["cam"] < 10 or counts["enc"] < 10: problems.append(f"too few frames in 2 s: {counts}")
if zeros: problems.append(f"{zeros} zero bytes in the logs")
for p in problems: print(f"FAIL: {fs}: {p}")
sys.exit(1 if problems else 0)
PY
	"$fieldcap" validate "$dir/s" > /dev/null || { echo "FAIL: $fs: the recording does not validate"; exit 1; }
done
# On FAT32 a raw camera's video reaches the 4 GiB file limit in minutes: a recording without
# segments says so at start, with a segment length that stays under it.
# Until stopped: Ctrl-C (SIGINT) once the start lines are out, when fieldcap takes the signal.
"$fieldcap" --cam "$dev,size=640x480,fps=30,id=cam" --min-free 16M --out "${dirs[vfat]}/one" \
	2> "$images/stderr" > /dev/null &
pid=$!
for _ in $(seq 60); do grep -q "Ctrl-C stops" "$images/stderr" && break; sleep 0.5; done
kill -INT "$pid"
wait "$pid" || true
grep -m1 "holds files of at most 4 GiB" "$images/stderr" | sed 's/^.*; //' \
	|| { echo "FAIL: vfat: no warning of its 4 GiB file limit"; cat "$images/stderr"; exit 1; }
echo "ok: ext4, XFS, f2fs (direct), btrfs, vfat, exFAT, tmpfs, 9p and FUSE: every frame the sidecars count is in the videos"
