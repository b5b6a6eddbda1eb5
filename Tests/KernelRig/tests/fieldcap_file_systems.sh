#!/bin/bash
# rig-timeout: 480
# rig-share: 240
# The same short recording (vivid VGA, a synthetic camera encoded as JPEG and a synthetic IMU,
# 2 s in 1 s segments) onto every file system a rig records to that the guest can make: its ext4
# scratch disk; XFS, btrfs, f2fs, vfat (FAT32, an SD card's) and exFAT on loop devices; tmpfs;
# 9p with cache=none (the guest's share, the kind of file system on which a clean recording once
# lost most of its video, #43) and cache=loose (the rig's spare tag); NFS (the kernel's nfsd
# over loopback, NFSv4.2, mounted hard as by default) and CIFS (Samba's smbd over loopback,
# SMB 3.1.1); FUSE (bindfs over ext4). Each: exit 0 and state complete, the start line names
# the file system and its write path, fieldcap.json's video_writes agrees (direct on ext4, XFS
# and f2fs, and on btrfs where statx reports its alignment; page cache elsewhere), each
# segment's videos hold every frame its sidecar counts (ffprobe) and their timestamp lines
# agree, no log holds a zero byte, and the recording validates. On vfat, a recording without
# segments is warned of FAT's 4 GiB file limit at start; on the hard NFS mount, that a lost
# server would hold it. Then the share goes away: nfsd stops under a recording to a soft mount
# and the user stops it; fieldcap begins the stop at once, gives up what the kernel holds and
# exits 1 naming recover, which finishes the session once the server is back.
# Its share is long for one test (about 205 s with the release build): twelve file systems,
# seven of them made or served on the spot, each recording read back with ffprobe segment by
# segment under TCG (four at a time), and a share that takes its mount's timeouts to give up.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
disk=${FIELDCAP_DISK_DIR:?no scratch disk in this guest}
share=${FIELDCAP_RIG_RESULTS:?no 9p share in this guest}
spare=${FIELDCAP_RIG_SPARE_9P:?no spare 9p tag in this guest}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
ext4=$(mktemp -d "$disk/fs.XXXXXX")
tmpfs=$(mktemp -d /tmp/fs.XXXXXX)
ninep=$(mktemp -d "$share/fs.XXXXXX")
images=$(mktemp -d "$disk/images.XXXXXX")
mounts=()
cleanup() {
	# A failure may leave nfsd stopped under a mount: serve again, so that no umount waits on it.
	rpc.nfsd -N 3 8 2>/dev/null || true
	for m in "${mounts[@]}"; do timeout 20 umount "$m" 2>/dev/null || umount -f -l "$m" 2>/dev/null || true; done
	pkill -x smbd 2>/dev/null || true
	rpc.nfsd 0 2>/dev/null || true
	rm -rf "$ext4" "$tmpfs" "$ninep" "$images"
}
trap cleanup EXIT
[ "$(stat -f -c %T "$tmpfs")" = tmpfs ] || { echo "FAIL: $tmpfs is not tmpfs"; exit 1; }
grep -q " $share .* - 9p " /proc/self/mountinfo || { echo "FAIL: $share is not a 9p mount"; exit 1; }
# vfat needs its code pages (what a desktop mounts an SD card with).
# CIFS's SMB 3.1.1 signing and encryption: its module names them without the `pre:` modprobe
# needs, so they are loaded here.
modprobe -a loop xfs btrfs f2fs vfat nls_cp437 nls_ascii nls_iso8859-1 nls_utf8 exfat fuse \
	nfsd nfsv4 cifs aesni-intel ghash-generic cmac ccm gcm || { echo "FAIL: a file system's module does not load"; exit 1; }

# The servers first, so that nfsd's grace period (it refuses opens for its first 10 s at
# least, 90 by default) has run out when NFS's turn comes. nfsd exports a tmpfs: its writes
# then stay out of the client's writeback on the same disk.
ip link set lo up
mkdir -p /proc/fs/nfsd /srv/nfs /srv/smb /var/lib/nfs/v4recovery /tmp/smb
{
	mount -t nfsd nfsd /proc/fs/nfsd
	mount -t tmpfs -o size=400M tmpfs /srv/nfs && mounts+=(/srv/nfs)
	mount -t tmpfs -o size=200M tmpfs /srv/smb && mounts+=(/srv/smb)
	echo "/srv/nfs 127.0.0.1(rw,no_root_squash,no_subtree_check,insecure,fsid=0,sync)" > /etc/exports
	exportfs -ra
	echo 10 > /proc/fs/nfsd/nfsv4gracetime
	echo 10 > /proc/fs/nfsd/nfsv4leasetime
	rpc.mountd -N 3 && rpc.nfsd -N 3 8
} || { echo "FAIL: nfsd does not start (its file system, the exported tmpfs, exportfs, mountd or nfsd)"; exit 1; }
cat > /tmp/smb/smb.conf <<SMB
[global]
  server role = standalone server
  smb ports = 445
  disable netbios = yes
  interfaces = lo
  bind interfaces only = yes
  lock directory = /tmp/smb
  state directory = /tmp/smb
  cache directory = /tmp/smb
  private dir = /tmp/smb
  pid directory = /tmp/smb
  ncalrpc dir = /tmp/smb/ncalrpc
  log file = /tmp/smb/log
  load printers = no
  printcap name = /dev/null
[rig]
  path = /srv/smb
  read only = no
  force user = root
SMB
printf 'rig\nrig\n' | smbpasswd -c /tmp/smb/smb.conf -s -a root > /dev/null
smbd -D -s /tmp/smb/smb.conf || { echo "FAIL: smbd does not start"; exit 1; }

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
mkdir -p "$images/9p-loose" "$images/nfs" "$images/nfs-soft" "$images/cifs"
mount -t 9p -o trans=virtio,version=9p2000.L,cache=loose,msize=262144 "$spare" "$images/9p-loose" \
	|| { echo "FAIL: cannot mount 9p tag $spare with cache=loose"; exit 1; }
mounts=("$images/9p-loose" "${mounts[@]}")
dirs[9p-loose]=$images/9p-loose
for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/445) 2>/dev/null && break; sleep 0.2; done
mount -t cifs //127.0.0.1/rig "$images/cifs" -o username=root,password=rig \
	|| { echo "FAIL: cannot mount CIFS from smbd"; dmesg | tail -5; exit 1; }
mounts=("$images/cifs" "${mounts[@]}")
dirs[cifs]=$images/cifs

# The mount table's name of each, where it is not the label's.
declare -A types=([9p-loose]=9p [nfs]=nfs4)
for fs in ext4 xfs btrfs f2fs vfat exfat tmpfs 9p 9p-loose cifs fuse nfs; do
	if [ "$fs" = nfs ]; then
		# Hard, as NFS mounts by default (unmounted after its recording: the share that goes
		# away, below, is a soft mount of its own).
		mount -t nfs4 -o retry=0 127.0.0.1:/ "$images/nfs" && mounts=("$images/nfs" "${mounts[@]}") \
			|| { echo "FAIL: cannot mount NFS from nfsd"; exit 1; }
		dirs[nfs]=$images/nfs
	fi
	dir=${dirs[$fs]}
	type=${types[$fs]:-$fs}
	status=0
	"$fieldcap" --cam "$dev,size=640x480,fps=30,id=cam" --cam synthetic:320x240@30,id=enc,encode=jpeg \
		--imu synthetic:100,id=imu --duration 2s --segment 1s --min-free 16M \
		--out "$dir/s" 2> "$images/stderr" > /dev/null || status=$?
	grep -m1 "^.*videos.* on $type" "$images/stderr" | tr -d '\r' | sed 's/^\x1b\[K//' | cut -c1-150 || true
	[ "$status" = 0 ] || { echo "FAIL: $fs: exit $status"; cat "$images/stderr"; exit 1; }
	# FUSE's mount type may carry the program's name (fuse.bindfs).
	grep -Eq "videos.* on $type(\.[a-z]+)?[: ]" "$images/stderr" || { echo "FAIL: $fs: no start line naming it"; cat "$images/stderr"; exit 1; }
	if [ "$fs" = nfs ]; then
		grep -q "nfs4 is mounted hard: if its server goes away" "$images/stderr" \
			|| { echo "FAIL: nfs: no warning that a hard mount holds the recording"; cat "$images/stderr"; exit 1; }
	elif grep -q "is mounted hard" "$images/stderr"; then
		echo "FAIL: $fs: warned of a hard mount"; exit 1
	fi
	python3 - "$dir/s" "$fs" <<'PY'
import json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
recording, fs = sys.argv[1], sys.argv[2]
# btrfs is coherent, but fieldcap writes directly only where statx reports the alignment
# (STATX_DIOALIGN), which the 6.12 kernel's btrfs does not: either is right there.
want = {"ext4": {"direct"}, "xfs": {"direct"}, "f2fs": {"direct"}, "btrfs": {"direct", "page cache"}}.get(fs, {"page cache"})
index = json.load(open(recording + "/recording.json"))
problems, counts, writes, zeros = [], {"cam": 0, "enc": 0}, set(), 0
def frames(video):
    return subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                           "stream=nb_read_frames", "-of", "csv=p=0", video], capture_output=True, text=True).stdout.strip()
# Every video's count at once, four ffprobes at a time: each FFmpeg start takes about a second in
# the emulated guest, mostly loading its libraries, and this runs twelve times.
videos = [f"{recording}/{segment['directory']}/{id}.mkv" for segment in index["segments"] for id in ("cam", "enc")]
with ThreadPoolExecutor(4) as pool:
    probed_counts = dict(zip(videos, pool.map(frames, videos)))
for segment in index["segments"]:
    session = f"{recording}/{segment['directory']}"
    sidecar = json.load(open(session + "/fieldcap.json"))
    if sidecar["state"] != "complete": problems.append(f"{segment['directory']}: state is {sidecar['state']}")
    for id in ("cam", "enc"):
        stream = next(s for s in sidecar["streams"] if s["id"] == id)
        lines = f"{session}/{id}.timestamps.jsonl"
        # A segment can end before a stream's first record in it (the last one, on a busy host,
        # before the stop): it holds no timestamps for the stream, and no frame.
        if stream["written"] == 0:
            if os.path.exists(lines) and os.path.getsize(lines) > 0:
                problems.append(f"{segment['directory']}/{id}: lines in {lines}, none written")
            continue
        probed = probed_counts[f"{session}/{id}.mkv"]
        stamped = sum(1 for _ in open(lines, "rb"))
        if not (probed == str(stamped) and stamped == stream["written"]):
            problems.append(f"{segment['directory']}/{id}: ffprobe {probed!r}, {stamped} lines, sidecar {stream['written']}")
        counts[id] += stream["written"]
        if id == "cam": writes.add(stream.get("video_writes"))
    for name in ("cam.frames.ndjson", "cam.timestamps.jsonl", "enc.timestamps.jsonl", "imu.timestamps.jsonl", "imu.jsonl"):
        if os.path.exists(f"{session}/{name}"):
            zeros += open(f"{session}/{name}", "rb").read().count(b"\0")
print(f"{fs}: {len(index['segments'])} segments, state {index['state']}, video_writes {sorted(writes)}, "
      f"cam {counts['cam']} frames, enc (JPEG) {counts['enc']}, each in its video and its lines, zero bytes in logs {zeros}")
if index["state"] != "complete": problems.append(f"the recording's state is {index['state']}")
if not writes <= want: problems.append(f"video_writes {sorted(writes)}, wanted {sorted(want)}")
# A floor, not a rate: a FUSE daemon or 9p on a busy host takes few frames in 2 s (8 beside a CPU
# hog, 1 beside a hog, a second guest and builds); what must hold is that each one is whole, in
# its video and its lines.
if counts["cam"] < 1 or counts["enc"] < 1: problems.append(f"no frame in 2 s: {counts}")
if zeros: problems.append(f"{zeros} zero bytes in the logs")
for p in problems: print(f"FAIL: {fs}: {p}")
sys.exit(1 if problems else 0)
PY
	"$fieldcap" validate "$dir/s" > /dev/null || { echo "FAIL: $fs: the recording does not validate"; exit 1; }
	if [ "$fs" = nfs ]; then umount "$images/nfs" || { echo "FAIL: cannot unmount NFS"; exit 1; }; fi
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

# The share goes away (#43): nfsd stops serving under a recording to the soft mount, and the user
# stops the recording. The stop must begin at once (nothing the recording's main thread does
# waits on the share), the watchdog gives up the writes the kernel holds, and fieldcap exits 1
# naming recover; with the server back, recover finishes the session and it validates.
mount -t nfs4 -o retry=0,soft,timeo=10,retrans=1 127.0.0.1:/ "$images/nfs-soft" \
	&& mounts=("$images/nfs-soft" "${mounts[@]}") || { echo "FAIL: cannot mount NFS soft"; exit 1; }
vanish=$images/nfs-soft/v
"$fieldcap" --cam "$dev,size=640x480,fps=30,id=cam" --imu synthetic:100,id=imu --min-free 16M --out "$vanish" \
	2> "$images/vanish" > /dev/null &
pid=$!
for _ in $(seq 60); do grep -q "Ctrl-C stops" "$images/vanish" && break; sleep 0.5; done
grep -q "Ctrl-C stops" "$images/vanish" || { echo "FAIL: the recording to NFS did not start"; cat "$images/vanish"; exit 1; }
sleep 2
rpc.nfsd 0
sleep 1
kill -TERM "$pid"
termed=$(date +%s)
since() { echo $(( $(date +%s) - termed )); }
alive() { kill -0 "$pid" 2>/dev/null; }
# The stop begins at once: nothing the main thread does waits on the share. (A write that failed
# just before may be its reason instead; either way it begins.)
for _ in $(seq 50); do grep -q "stopping (" "$images/vanish" && break; sleep 0.2; done
grep -q "stopping (" "$images/vanish" || { echo "FAIL: the stop did not begin within 10 s of SIGTERM"; cat "$images/vanish"; kill -KILL "$pid"; exit 1; }
began=$(since)
# fieldcap gives the stop up itself (its watchdog: 20 s on a disk seen stalling, 60 s on any).
while alive && ! grep -q "has not let the recording stop" "$images/vanish" && [ "$(since)" -lt 80 ]; do sleep 0.2; done
grep -q "has not let the recording stop" "$images/vanish" || ! alive \
	|| { echo "FAIL: no end and no word of giving the stop up within $(since) s of SIGTERM"; cat "$images/vanish"; kill -KILL "$pid"; exit 1; }
gave=$(since)
# fieldcap has given up and exits. The kernel then holds the process until the share's pending
# writes and closes fail, which took from 25 s to more than 180 s here (an NFSv4 close for each
# open file, each retrying the dead server with a growing backoff; `umount -f` did not shorten
# it). That wait is the kernel's, the same for any program writing there, and not timed here.
# The server comes back: the kernel's pending calls end, and so does the process.
rpc.nfsd -N 3 8
back=$(since)
for _ in $(seq 300); do alive || break; sleep 0.2; done
if alive; then
	echo "FAIL: the recording did not end within $(since) s of SIGTERM, the server back"
	grep State "/proc/$pid/status" || true; cat /proc/"$pid"/task/*/stack 2>/dev/null | sort | uniq -c | sort -rn | head || true
	kill -KILL "$pid"; exit 1
fi
status=0
wait "$pid" || status=$?
echo "the share went away: the stop began ${began} s after SIGTERM and was given up at ${gave} s; with the server back at $back s, fieldcap ended at $(since) s, exit $status"
tr '\r' '\n' < "$images/vanish" | grep -E "^(stopping|Error)" | cut -c1-220 || true
[ "$status" = 1 ] || { echo "FAIL: exit $status, wanted 1"; cat "$images/vanish"; exit 1; }
grep -q "fieldcap recover" "$images/vanish" || { echo "FAIL: the error does not name recover"; cat "$images/vanish"; exit 1; }

# The share is mounted again, as a user remounts a share that went away (the old mount's state
# ended with its server; nfsd's grace period, 10 s, passes in the first open), and recover
# finishes the session from what reached the server.
umount -f -l "$images/nfs-soft"
mount -t nfs4 -o retry=0,soft,timeo=10,retrans=1 127.0.0.1:/ "$images/nfs-soft" \
	|| { echo "FAIL: cannot mount NFS again"; exit 1; }
recovering=$(date +%s)
out=$(timeout 120 "$fieldcap" recover "$vanish" 2>&1) || { echo "FAIL: recover after the share came back: $out"; exit 1; }
echo "$out" | tail -1
echo "recovered in $(( $(date +%s) - recovering )) s"
timeout 60 "$fieldcap" validate "$vanish" > /dev/null || { echo "FAIL: the recovered session does not validate"; exit 1; }
echo "ok: ext4, XFS, f2fs (direct), btrfs, vfat, exFAT, tmpfs, 9p (none, loose), CIFS, NFS and FUSE: every frame the sidecars count is in the videos; a share that went away ends in a stop and a recover"
