#!/bin/bash
# rig-timeout: 300
# rig-share: 90
# Recording in segments from real drivers: vivid and the IIO dummy in 1 s segments for 10 s.
# Every segment validates; vivid's kernel sequence numbers (from each segment's frame log) and the
# IMU's sample counts run on across every boundary, with no gap the index does not count as
# missing; each cut is reported (how long after its boundary each stream's first record came).
# A range across three segments extracts into a valid session with exactly the lines in range.
# Then a recording killed with SIGKILL in the middle of a segment: `fieldcap recover` finishes it,
# leaves the finished segments byte for byte, and the index and every segment validate.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
dir=${FIELDCAP_DISK_DIR:-$FIELDCAP_TEST_TMP}
v4l2-ctl -d "$dev" -c timestamp_source=1
D=${FIELDCAP_IIO_DEVICE_SYSFS:?}
# The recorder killed below leaves the dummy's buffer enabled (the next fieldcap takes it back; a
# test that writes the dummy's sysfs first could not): it is disabled at the end.
trap 'v4l2-ctl -d "$dev" -c timestamp_source=0 >/dev/null 2>&1 || true; echo 0 > "$D/buffer/enable" 2>/dev/null || true' EXIT

recording=$dir/segments
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --imu "$imu,rate=200,trigger=$trig,id=imu" \
	--segment 1s --duration 10s --out "$recording" -q
"$fieldcap" validate -q "$recording" || { echo "FAIL: the recording does not validate"; "$fieldcap" validate "$recording" | tail -20; exit 1; }

/usr/bin/python3 - "$recording" <<'PY'
import json, os, sys
recording = sys.argv[1]
index = json.load(open(f"{recording}/recording.json"))
fails = []
segments = index["segments"]
print(f"{len(segments)} segments, state {index['state']}")
if len(segments) < 9: fails.append(f"only {len(segments)} segments in 10 s of 1 s segments")
if any(s["state"] != "complete" for s in segments): fails.append("a segment is not complete")
# vivid: the kernel's sequence numbers, read from each segment's frame log, in segment order.
sequences, missing = [], 0
for s in segments:
    # A 1 s segment can close before the emulated vivid's first frame (the last one when the stop
    # falls just past a boundary): it holds no camera frame, so no timestamp lines either.
    if s["streams"]["cam"]["records"] == 0:
        d = f"{recording}/{s['directory']}"
        held = [f for f in ("cam.frames.ndjson", "cam.timestamps.jsonl") if os.path.exists(f"{d}/{f}") and os.path.getsize(f"{d}/{f}")]
        if held: fails.append(f"{s['directory']}: no camera record in the index, but {', '.join(held)} not empty")
        missing += s["streams"]["cam"]["missing"]
        continue
    log = [json.loads(l) for l in open(f"{recording}/{s['directory']}/cam.frames.ndjson")]
    stamps = sum(1 for _ in open(f"{recording}/{s['directory']}/cam.timestamps.jsonl"))
    if len(log) != stamps: fails.append(f"{s['directory']}: {len(log)} frame log lines, {stamps} timestamp lines")
    sequences += [l["sequence"] for l in log]
    missing += s["streams"]["cam"]["missing"]
gaps = sum(b - a - 1 for a, b in zip(sequences, sequences[1:]))
if any(b <= a for a, b in zip(sequences, sequences[1:])): fails.append("cam: a sequence number repeats or goes back")
print(f"cam: {len(sequences)} frames in {len(segments)} segments, sequence {sequences[0]}..{sequences[-1]}, "
      f"{gaps} missing by the sequence, {missing} counted missing in the index")
if gaps != missing: fails.append(f"cam: {gaps} frames missing by the kernel's sequence numbers, the index counts {missing}")
# Each boundary: the next segment's first frame is the one after the previous segment's last,
# unless the index counts the frames between as missing.
for a, b in zip(segments, segments[1:]):
    for stream in ("cam", "imu"):
        x, y = a["streams"][stream], b["streams"][stream]
        if x["records"] == 0 or y["records"] == 0: continue
        gap = y["first_sequence"] - x["last_sequence"] - 1
        if gap < 0 or gap > y["missing"]:
            fails.append(f"{stream}: {gap} records between {a['directory']} and {b['directory']}, {y['missing']} counted")
# The IMU's samples: every one in exactly one segment.
imu = [s["streams"]["imu"] for s in segments if s["streams"]["imu"]["records"] > 0]
span = imu[-1]["last_sequence"] - imu[0]["first_sequence"] + 1
held = sum(c["records"] + c["missing"] for c in imu)
print(f"imu: {sum(c['records'] for c in imu)} samples, sequence span {span}, records + missing {held}")
if held != span: fails.append(f"imu: the segments hold {held} samples and missing ones, the sequence spans {span}")
# The cut: how long after its boundary each stream's first record came.
for stream in ("cam", "imu"):
    # A segment that holds no record of the stream has no first record: the index leaves the key out.
    after = sorted(s["streams"][stream]["first_after_start_seconds"] * 1000 for s in segments[1:]
                   if s["streams"][stream].get("first_after_start_seconds") is not None)
    print(f"{stream}: first record after the boundary: median {after[len(after) // 2]:.1f} ms, "
          f"max {after[-1]:.1f} ms, min {after[0]:.1f} ms over {len(after)} boundaries")
    if after[0] < 0: fails.append(f"{stream}: a record before its segment's start")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY

# A range across three segments: from half a second into the 5th segment to half into the 7th.
# (No process substitution: the guest has no /dev/fd.)
range=$(/usr/bin/python3 - "$recording" <<'PY'
import json, sys, datetime
segments = json.load(open(f"{sys.argv[1]}/recording.json"))["segments"]
def later(utc, seconds):
    t = datetime.datetime.strptime(utc, "%Y-%m-%dT%H:%M:%S.%fZ") + datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
print(later(segments[4]["start_utc"], 0.5), later(segments[6]["start_utc"], 0.5))
PY
)
from=${range% *}
to=${range#* }
clip=$dir/clip
"$fieldcap" extract "$recording" --from "$from" --to "$to" --out "$clip"
"$fieldcap" validate -q "$clip"
/usr/bin/python3 - "$recording" "$clip" "$from" "$to" <<'PY'
import datetime, json, os, subprocess, sys
recording, clip, start, end = sys.argv[1:5]
def ns(utc): return int(datetime.datetime.strptime(utc, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp() * 1e9)
lo, hi = ns(start), ns(end)
manifest = json.load(open(f"{clip}/manifest.json"))["streams"]
fails = []
for stream in ("cam", "imu"):
    want = 0
    for s in json.load(open(f"{recording}/recording.json"))["segments"]:
        sync = json.load(open(f"{recording}/{s['directory']}/sync_point.json"))
        if not os.path.exists(f"{recording}/{s['directory']}/{stream}.timestamps.jsonl"): continue
        for line in open(f"{recording}/{s['directory']}/{stream}.timestamps.jsonl"):
            wall = json.loads(line)["capture_ns"] - sync["monotonic_ns"] + sync["wall_clock_ns"]
            want += lo <= wall < hi
    got = sum(1 for _ in open(f"{clip}/{stream}.timestamps.jsonl"))
    print(f"extract {stream}: {got} lines, {want} in range in the recording, manifest {manifest[stream]['frame_count']}")
    if not (got == want == manifest[stream]["frame_count"]): fails.append(f"{stream}: {got} extracted, {want} in range")
decoded = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=nb_read_frames", "-of", "csv=p=0", f"{clip}/cam.mkv"], capture_output=True, text=True)
print(f"ffprobe: {decoded.stdout.strip()} frames in cam.mkv")
if decoded.stdout.strip() != str(manifest["cam"]["frame_count"]): fails.append(f"ffprobe decoded {decoded.stdout.strip()} frames")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY

# SIGKILL in the middle of the 5th segment (the 6th is made ready as the 5th starts).
killed=$dir/killed
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --imu "$imu,rate=200,trigger=$trig,id=imu" \
	--segment 1s --out "$killed" -q 2>"$dir/killed.err" &
recorder=$!
for _ in $(seq 600); do compgen -G "$killed/00000006-*" >/dev/null && break; sleep 0.05; done
sleep 0.5
kill -KILL "$recorder"
wait "$recorder" 2>/dev/null || true
compgen -G "$killed/00000006-*" >/dev/null || { echo "FAIL: the recording never reached its 5th segment: $(cat "$dir/killed.err")"; exit 1; }
before=$(cd "$killed" && python3 -c '
import json, hashlib
for s in json.load(open("recording.json"))["segments"]:
    if s["state"] == "complete":
        print(s["directory"], hashlib.sha256(open(s["directory"] + "/fieldcap.json", "rb").read()).hexdigest())')
"$fieldcap" recover "$killed"
"$fieldcap" validate -q "$killed" || { echo "FAIL: the recovered recording does not validate"; exit 1; }
after=$(cd "$killed" && python3 -c '
import json, hashlib
for s in json.load(open("recording.json"))["segments"]:
    if s["state"] == "complete":
        print(s["directory"], hashlib.sha256(open(s["directory"] + "/fieldcap.json", "rb").read()).hexdigest())')
[ "$before" = "$after" ] || { echo "FAIL: recover changed a finished segment"; echo "before: $before"; echo "after: $after"; exit 1; }
/usr/bin/python3 - "$killed" <<'PY'
import json, os, sys
index = json.load(open(f"{sys.argv[1]}/recording.json"))
states = [s["state"] for s in index["segments"]]
print(f"after recover: {len(states)} segments, {states.count('complete')} complete, {states.count('recovered')} recovered, index {index['state']}")
on_disk = sorted(d for d in os.listdir(sys.argv[1]) if os.path.isdir(f"{sys.argv[1]}/{d}"))
fails = []
if index["state"] != "recovered": fails.append(f"index state {index['state']}")
if "recovered" not in states or any(s not in ("complete", "recovered") for s in states): fails.append(f"states {states}")
if on_disk != [s["directory"] for s in index["segments"]]: fails.append(f"directories {on_disk} do not match the index")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
echo "segments: every check passed"
