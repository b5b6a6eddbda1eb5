#!/bin/bash
# rig-timeout: 600
# Power cuts: fieldcap records onto ext4 on a virtio disk attached with cache=none (the guest's
# page cache is all a cut loses, as on a real machine), and the power is cut with sysrq at a
# moment drawn from the seed: 4 rounds at random moments, synthetic sources (cameras 640x480 and
# 320x240 at 30 fps, a 400 Hz IMU) and vivid with the IIO dummy taking turns, then one cut while
# the recording stops and writes sync_point.json, one while it writes manifest.json. The next boot
# mounts the disk (ext4 replays its journal), runs `fieldcap recover` and checks the session
# (power_cut_guest.py): it validates, each video holds exactly one frame per timestamp line, at
# that line's time (read by ffprobe), frame_number is the index, and no stream lost more than the
# sync interval before the cut. Each boot also records the next round, so 6 cuts take 7 boots
# (about 14 s each under TCG: the rounds at random moments were 6, until the suite needed room).
#
# FIELDCAP_POWER_CUT_SEED=N replays a run's moments; FIELDCAP_POWER_CUT_ROUNDS (default 6, the
# last two cut while stopping) runs fewer or more.
set -euo pipefail
rig=${FIELDCAP_RIG:?run through Tests/KernelRig/rig test}
tmp=${FIELDCAP_TEST_TMP:?}
repo=${FIELDCAP_REPO:?}
# The binary a rig runs (scripts/build-release, which scripts/test runs before the kernel tests);
# optimized, it also recovers and validates in a few seconds under emulation, not tens.
fieldcap=$repo/.build/release/fieldcap
[ -x "$fieldcap" ] || { echo "no $fieldcap: run scripts/build-release first"; exit 1; }
newer=$(find "$repo/Sources" -newer "$fieldcap" -type f -print -quit)
[ -z "$newer" ] || { echo "$fieldcap is older than $newer: run scripts/build-release first"; exit 1; }
seed=${FIELDCAP_POWER_CUT_SEED:-$(( (RANDOM << 15) | RANDOM ))}
rounds=${FIELDCAP_POWER_CUT_ROUNDS:-6}
echo "seed $seed, $rounds rounds (FIELDCAP_POWER_CUT_SEED=$seed replays them)"

disk=$tmp/disk.img
truncate -s 2G "$disk"
mkfs.ext4 -q -F "$disk"
state=$tmp/state
mkdir -p "$state"

for round in $(seq 1 $((rounds + 1))); do
	t0=$(date +%s.%N)
	status=0
	"$rig" run --disk "$disk" --disk-cache none --share "$state" --timeout 150 -- \
		/usr/bin/python3 "$repo/Tests/KernelRig/boot-tests/power_cut_guest.py" "$state" "$round" "$rounds" "$seed" "$fieldcap" || status=$?
	took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	if [ "$status" != 0 ]; then
		echo "FAIL: boot $round exited $status after $took s (seed $seed; the disk image and state are in $tmp)"
		exit 1
	fi
	if [ "$round" -le "$rounds" ] && [ ! -f "$state/cut-$round.json" ]; then
		echo "FAIL: boot $round ended without cutting the power (seed $seed)"
		exit 1
	fi
	echo "boot $round: $took s"
done

# What the cuts cost, per stream: the seconds lost before the cut, lines restored, frames cut.
/usr/bin/python3 - "$state" "$rounds" <<'PY'
import json, sys
state, rounds = sys.argv[1], int(sys.argv[2])
results = [json.load(open(f"{state}/result-{n}.json")) for n in range(1, rounds + 1)]
for kind in ("synthetic", "vivid"):
    for stream in ("cam_a", "cam_b", "imu"):
        runs = [r["streams"][stream] for r in results if r["kind"] == kind and r["when"] == "random"]
        if not runs: continue
        lost = sorted(e["lost_s"] for e in runs)
        extra = ""
        if stream.startswith("cam"):
            restored = sorted(e["restored"] for e in runs)
            extra = (f", lines restored {restored[0]}-{restored[-1]} a cut ({sum(restored)} in all),"
                     f" frames cut {sum(e['cut'] for e in runs)}")
        print(f"{kind} {stream}: {len(runs)} cuts, lost {lost[0]:.2f}-{lost[-1]:.2f} s (median {lost[len(lost) // 2]:.2f}){extra}")
for r in results:
    if r["when"] != "random":
        print(f"cut at {r['when']}: state after recover '{r['state']}', lost before the stop: "
              + ", ".join(f"{s} {e['lost_s']:.2f} s" for s, e in r["streams"].items()))
PY
