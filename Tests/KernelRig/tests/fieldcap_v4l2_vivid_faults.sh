#!/bin/bash
# rig-timeout: 150
# rig-share: 15
# fieldcap against vivid's fault injection: dropped buffers show as kernel sequence gaps, counted
# exactly (the per-frame log's sequence numbers agree with the sidecar's count); a buffer the
# driver marks V4L2_BUF_FLAG_ERROR is kept, flagged in the per-frame log and counted.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
restore() { v4l2-ctl -d "$dev" -c percentage_of_dropped_buffers=0 >/dev/null 2>&1 || true; }
trap restore EXIT

v4l2-ctl -d "$dev" -c timestamp_source=1
v4l2-ctl -d "$dev" -c percentage_of_dropped_buffers=30
session=$FIELDCAP_TEST_TMP/drops
"$fieldcap" --cam "$dev,size=320x180,fps=30,id=cam" --duration 3s --out "$session" -q &
recorder=$!
sleep 2
v4l2-ctl -d "$dev" -c inject_v4l2_buf_flag_error=1
wait "$recorder"
"$fieldcap" validate -q "$session"

/usr/bin/python3 - "$session" <<'PY'
import json, sys
session = sys.argv[1]
info = json.load(open(f"{session}/fieldcap.json"))
cam = next(s for s in info["streams"] if s["id"] == "cam")
frames = [json.loads(l) for l in open(f"{session}/cam.frames.ndjson")]
stamps = [json.loads(l) for l in open(f"{session}/cam.timestamps.jsonl")]
seq = [f["sequence"] for f in frames]
gaps = sum(b - a - 1 for a, b in zip(seq, seq[1:]))
counted = cam["v4l2"]["kernel_sequence_gaps"]["count"]
flagged = [f for f in frames if f["flags"] & 0x40]
print(f"{len(frames)} frames, sequence gaps in the log {gaps}, counted {counted}; "
      f"error-flagged {len(flagged)}, counted {cam['v4l2']['frames_with_error_flag']}")
fails = []
if len(frames) != len(stamps) or len(frames) != cam["written"]: fails.append("per-frame log, timestamps and count disagree")
if [f["frame_number"] for f in frames] != list(range(len(frames))): fails.append("frame_number is not contiguous")
if [f["capture_ns"] for f in frames] != [s["capture_ns"] for s in stamps]: fails.append("capture_ns differs between the logs")
if gaps == 0: fails.append("30% dropped buffers produced no sequence gaps")
if gaps != counted: fails.append(f"gaps {gaps} != counted {counted}")
if not flagged: fails.append("no frame carries V4L2_BUF_FLAG_ERROR")
if len(flagged) != cam["v4l2"]["frames_with_error_flag"]: fails.append("error-flag count disagrees")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
