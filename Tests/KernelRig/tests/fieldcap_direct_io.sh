#!/bin/bash
# rig-timeout: 200
# rig-share: 60
# Video written with direct I/O on a real block device (the rig's scratch disk: ext4 on virtio):
# vivid's mmap'd frames go from the kernel's buffers to the disk. The session says so
# ("video_writes": "direct"), validates, and its video holds every stamped frame, each starting
# on a 4 KiB boundary, all decoded by ffmpeg. The same synthetic frames written directly and
# through the page cache decode to the same pixels. And a disk that fills up under direct writes
# stops the recording cleanly (exit 4), leaving a session that validates.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
disk=${FIELDCAP_DISK_DIR:?no scratch disk in this guest}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
work=$(mktemp -d "$disk/direct.XXXXXX")
small=$work/small
trap 'umount "$small" 2>/dev/null || true; rm -rf "$work"' EXIT

video_writes() { # video_writes SESSION STREAM
	python3 -c 'import json, sys; print(next(s.get("video_writes") for s in json.load(open(sys.argv[1] + "/fieldcap.json"))["streams"] if s["id"] == sys.argv[2]))' "$1" "$2"
}

session=$work/vivid
"$fieldcap" --cam "$dev,size=640x480,fps=30,id=cam" --imu synthetic:200,id=imu --duration 5s --out "$session" -q
"$fieldcap" validate "$session"
writes=$(video_writes "$session" cam)
[ "$writes" = direct ] || { echo "FAIL: video_writes is '$writes' on ext4, wanted direct"; exit 1; }
frames=$(wc -l < "$session/cam.timestamps.jsonl")
probed=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$session/cam.mkv")
decoded=$(ffmpeg -v error -i "$session/cam.mkv" -fps_mode passthrough -f rawvideo -pix_fmt yuyv422 - | wc -c)
echo "vivid, direct: $frames frames stamped, ffprobe counts $probed, ffmpeg decodes $decoded bytes"
[ "$frames" -ge 130 ] || { echo "FAIL: only $frames frames in 5 s at 30 fps"; exit 1; }
[ "$probed" = "$frames" ] || { echo "FAIL: the video holds $probed frames, $frames were stamped"; exit 1; }
[ "$decoded" = $((frames * 614400)) ] || { echo "FAIL: ffmpeg decoded $decoded bytes, wanted $frames frames of 614400"; exit 1; }
# Where each frame's bytes start: after a SimpleBlock's track number, timecode and flags.
python3 - "$session/cam.mkv" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
def element(p):
    width = 8 - data[p].bit_length() + 1
    ident = int.from_bytes(data[p:p + width], "big")
    q = p + width
    length = 8 - data[q].bit_length() + 1
    size = data[q] & ((1 << (8 - length)) - 1)
    for b in data[q + 1:q + length]: size = size << 8 | b
    return ident, q + length, size
ident, start, size = element(0)
p = start + size                               # past the EBML header
ident, p, size = element(p)                    # into the Segment
starts, voids = [], 0
while p < len(data):
    ident, body, size = element(p)
    if ident == 0xEC: voids += 1
    if ident == 0x1F43B675:                    # Cluster: its Timestamp, then its SimpleBlock
        q = body
        while q < body + size:
            child, cbody, csize = element(q)
            if child == 0xA3: starts.append(cbody + 4)
            q = cbody + csize
    p = body + size
bad = [s for s in starts if s % 4096]
print(f"{len(starts)} frames, {voids} Void elements, {len(bad)} frames off a 4 KiB boundary")
sys.exit(1 if bad or not starts else 0)
PY

# The same synthetic frames, directly and through the page cache: the same pixels. A synthetic
# frame's pixels follow from its sequence number, and a frame dropped (all buffers at the
# writer: under emulation a write can wait that long) shifts the rest, so frames are paired by
# sequence, through the frame log. ffmpeg decodes every frame as it is (passthrough): its
# constant-rate default would drop and repeat frames around a gap.
"$fieldcap" --cam synthetic:640x480@30,id=cam --duration 2s --out "$work/direct" -q
"$fieldcap" --cam synthetic:640x480@30,id=cam --duration 2s --out "$work/cached" -q --no-direct-io
[ "$(video_writes "$work/direct" cam)" = direct ] && [ "$(video_writes "$work/cached" cam)" = "page cache" ] \
	|| { echo "FAIL: video_writes: $(video_writes "$work/direct" cam) / $(video_writes "$work/cached" cam)"; exit 1; }
for s in direct cached; do
	ffmpeg -v error -i "$work/$s/cam.mkv" -fps_mode passthrough -f framemd5 - | grep -v '^#' | cut -d, -f6 > "$work/$s.md5"
done
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def frames(name):
    hashes = [line.strip() for line in open(f"{work}/{name}.md5")]
    sequences = [json.loads(line)["sequence"] for line in open(f"{work}/{name}/cam.frames.ndjson")]
    drops = next(s["drops"]["count"] for s in json.load(open(f"{work}/{name}/fieldcap.json"))["streams"])
    print(f"synthetic, {name}: {len(hashes)} frames decoded, {len(sequences)} logged, {drops} dropped")
    if len(hashes) != len(sequences): sys.exit(f"FAIL: {name}: {len(hashes)} frames decoded, {len(sequences)} logged")
    return dict(zip(sequences, hashes))
direct, cached = frames("direct"), frames("cached")
common = sorted(set(direct) & set(cached))
differ = [s for s in common if direct[s] != cached[s]]
print(f"{len(common)} frames in both, {len(differ)} differ")
sys.exit(1 if differ or len(common) < 30 else 0)
PY
# A small ext4 filesystem that fills up under direct writes.
modprobe loop
truncate -s 40M "$work/small.img"
mkfs.ext4 -q -F "$work/small.img"
mkdir -p "$small"
mount -o loop "$work/small.img" "$small"
status=0
err=$("$fieldcap" --cam "$dev,size=640x480,fps=30,id=cam" --imu synthetic:200,id=imu --out "$small/full" --min-free 0 --duration 30s -q 2>&1) || status=$?
echo "exit $status: $err"
[ "$status" = 4 ] && grep -q "No space left" <<<"$err" || { echo "FAIL: exit status $status, wanted 4 with 'No space left'"; exit 1; }
"$fieldcap" validate "$small/full"
[ "$(video_writes "$small/full" cam)" = direct ] || { echo "FAIL: the full disk's video was not written directly"; exit 1; }
frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$small/full/cam.mkv")
stamps=$(wc -l < "$small/full/cam.timestamps.jsonl")
echo "full disk: $stamps timestamp lines, $frames frames in the video"
[ "$frames" -gt 0 ] && [ "$stamps" -le "$frames" ] || { echo "FAIL: $stamps timestamp lines for $frames frames"; exit 1; }
