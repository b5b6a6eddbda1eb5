#!/bin/bash
# rig-timeout: 150
# rig-share: 30
# A full disk (a 24 MiB tmpfs made for the test): recording two 640x480 cameras and an IMU with
# --min-free 0 runs into ENOSPC within a second. fieldcap stops cleanly: exit status 4, one
# clear line, and a session that validates, whose timestamp lines refer only to frames its
# videos hold and whose IMU keeps every sample both of its files reached. The --min-free guard
# refuses to start on a disk already below it, leaving nothing behind.
set -euo pipefail
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
small=$FIELDCAP_TEST_TMP/small
mkdir -p "$small"
mount -t tmpfs -o size=24m tmpfs "$small"
trap 'umount "$small" 2>/dev/null || true' EXIT

status=0
err=$("$fieldcap" --cam synthetic:640x480@30,id=cam_a --cam synthetic:640x480@30,id=cam_b --imu synthetic:500,id=imu \
	--out "$small/full" --min-free 0 --duration 20s -q 2>&1) || status=$?
echo "exit $status: $err"
[ "$status" = 4 ] || { echo "FAIL: exit status $status, wanted 4 (disk full)"; exit 1; }
grep -q "disk full" <<<"$err" && grep -q "No space left" <<<"$err" || { echo "FAIL: the message does not say the disk is full"; exit 1; }
"$fieldcap" validate "$small/full"
/usr/bin/python3 - "$small/full" <<'PY'
import json, subprocess, sys
session = sys.argv[1]
info = json.load(open(f"{session}/fieldcap.json"))
print("state:", info["state"][:60])
fails = []
if not info["state"].startswith("stopped: disk full"): fails.append(f"state {info['state']}")
for cam in ("cam_a", "cam_b"):
    stamps = sum(1 for _ in open(f"{session}/{cam}.timestamps.jsonl"))
    probe = subprocess.run(["ffprobe", "-v", "quiet", "-count_frames", "-select_streams", "v:0", "-show_entries",
                            "stream=nb_read_frames", "-of", "csv=p=0", f"{session}/{cam}.mkv"], capture_output=True, text=True)
    frames = int(probe.stdout.strip() or 0)
    print(f"{cam}: {stamps} timestamp lines, {frames} frames in the video")
    if stamps > frames: fails.append(f"{cam}: {stamps} timestamp lines for {frames} frames")
    if frames == 0: fails.append(f"{cam}: no frame kept")
imu = sum(1 for _ in open(f"{session}/imu.timestamps.jsonl"))
print(f"imu: {imu} samples")
if imu < 100: fails.append(f"only {imu} IMU samples kept")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY

# Below --min-free before starting: refused, nothing made.
rm -rf "$small/full"
dd if=/dev/zero of="$small/filler" bs=1M count=20 status=none
status=0
err=$("$fieldcap" --imu synthetic:100 --out "$small/refused" --duration 2s 2>&1) || status=$?
echo "exit $status: $err"
[ "$status" = 4 ] && grep -q -- "--min-free" <<<"$err" && [ "$(wc -l <<<"$err")" = 1 ] || { echo "FAIL: not refused with one line and exit 4"; exit 1; }
[ ! -e "$small/refused" ] || { echo "FAIL: a session directory was left behind"; exit 1; }
