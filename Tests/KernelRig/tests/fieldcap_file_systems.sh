#!/bin/bash
# rig-timeout: 180
# rig-share: 45
# The same short recording (vivid VGA and a synthetic IMU, 2 s) onto every file system the guest
# has at hand: its ext4 scratch disk, tmpfs and a 9p share (cache=none), the kind of file system
# on which a clean recording once lost most of its video (#43). Each: exit 0 and state complete,
# the start line names the file system and its write path, fieldcap.json's video_writes agrees
# (direct on ext4, page cache elsewhere), the video holds every frame the sidecar counts (ffprobe)
# and its timestamp lines agree, and no log holds a zero byte.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
disk=${FIELDCAP_DISK_DIR:?no scratch disk in this guest}
share=${FIELDCAP_RIG_RESULTS:?no 9p share in this guest}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
ext4=$(mktemp -d "$disk/fs.XXXXXX")
tmpfs=$(mktemp -d /tmp/fs.XXXXXX)
ninep=$(mktemp -d "$share/fs.XXXXXX")
trap 'rm -rf "$ext4" "$tmpfs" "$ninep"' EXIT
[ "$(stat -f -c %T "$tmpfs")" = tmpfs ] || { echo "FAIL: $tmpfs is not tmpfs"; exit 1; }
grep -q " $share .* - 9p " /proc/self/mountinfo || { echo "FAIL: $share is not a 9p mount"; exit 1; }

for fs in ext4 tmpfs 9p; do
	case $fs in ext4) dir=$ext4 ;; tmpfs) dir=$tmpfs ;; 9p) dir=$ninep ;; esac
	status=0
	"$fieldcap" --cam "$dev,size=640x480,fps=30,id=cam" --imu synthetic:100,id=imu --duration 2s \
		--out "$dir/s" 2> "$dir/stderr" > /dev/null || status=$?
	grep -m1 "^.*videos.* on $fs" "$dir/stderr" | tr -d '\r' | sed 's/^\x1b\[K//' || true
	[ "$status" = 0 ] || { echo "FAIL: $fs: exit $status"; cat "$dir/stderr"; exit 1; }
	grep -q "videos.* on $fs" "$dir/stderr" || { echo "FAIL: $fs: no start line naming it"; cat "$dir/stderr"; exit 1; }
	probed=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 \
		"$dir/s/cam.mkv")
	python3 - "$dir/s" "$fs" "$probed" <<'PY'
import json, sys
session, fs, probed = sys.argv[1], sys.argv[2], int(sys.argv[3])
sidecar = json.load(open(session + "/fieldcap.json"))
cam = next(s for s in sidecar["streams"] if s["id"] == "cam")
want = "direct" if fs == "ext4" else "page cache"
stamped = sum(1 for _ in open(session + "/cam.timestamps.jsonl", "rb"))
zeros = {name: open(f"{session}/{name}", "rb").read().count(b"\0")
         for name in ("cam.frames.ndjson", "cam.timestamps.jsonl", "imu.timestamps.jsonl", "imu.jsonl")}
print(f"{fs}: state {sidecar['state']}, video_writes {cam.get('video_writes')}, written {cam['written']}, "
      f"ffprobe {probed}, timestamp lines {stamped}, zero bytes in logs {sum(zeros.values())}")
problems = []
if sidecar["state"] != "complete": problems.append(f"state is {sidecar['state']}")
if cam.get("video_writes") != want: problems.append(f"video_writes is {cam.get('video_writes')}, wanted {want}")
if cam["written"] < 10: problems.append(f"only {cam['written']} frames in 2 s")
if not (probed == stamped == cam["written"]): problems.append("the video, its lines and the sidecar disagree")
problems += [f"{name} holds {count} zero bytes" for name, count in zeros.items() if count]
for p in problems: print(f"FAIL: {fs}: {p}")
sys.exit(1 if problems else 0)
PY
	"$fieldcap" validate "$dir/s" > /dev/null || { echo "FAIL: $fs: the session does not validate"; exit 1; }
done
echo "ok: ext4 (direct), tmpfs and 9p (page cache): every frame the sidecar counts is in the video"
