"""Checks a segmented recording whose UVC gadget camera was unplugged and plugged in again.

    uvc_rejoin_check.py RECORDING CAMERA_ID WIDTHxHEIGHT IMU_ID REPLUGS FEEDER_LOG...

FEEDER_LOG are the feeder's logs, one per plug, in order (tools/uvc-feeder.c restarts its frame
numbers at each start; its clock readings tell the plugs apart). Required: the camera keeps its
stream id in every segment; the sidecars and the index document exactly REPLUGS times away, each
with a return, its length, and the frames it is worth at the nominal rate; the IMU never ends and
fieldcap loses none of its samples (any missing is a period the device's own timeline skipped); every frame in the videos, read in segment order, is one the feeder of its plug
made (identity cells), plugs in order, numbers rising within a plug, the kernel's sequence
advancing as the feeder's numbers do within a plug; frames are recorded after every return; and
no frame lies inside a time away.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from uvc_check import feeder_log, identities  # noqa: E402

recording, camera, size, imu_id, replugs, logs = (
    sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6:])
width, height = (int(v) for v in size.split("x"))
fails = []
index = json.load(open(f"{recording}/recording.json"))
segments = [s for s in index["segments"] if s["state"] != "deleted"]

# The times away, as the sidecars and the index tell them (an absence that spans a boundary is
# in both segments: the same left_at).
away_sidecar, away_index, imu_written, imu_dropped, imu_lost, device_gaps = {}, {}, 0, 0, set(), None
device_gaps_from, device_missing = None, 0
# Per time away (by when it left): the frames it is worth, summed over the segments it reaches
# into (each counts only its own part), in the sidecars and in the index.
worth_sidecar, worth_index, camera_missing = {}, {}, 0
frames, stamps, seen = [], [], []
for segment in segments:
    path = f"{recording}/{segment['directory']}"
    info = json.load(open(f"{path}/fieldcap.json"))
    streams = {s["id"]: s for s in info["streams"]}
    if camera not in streams:
        fails.append(f"{segment['directory']}: no stream {camera}: {sorted(streams)}")
        continue
    for entry in streams[camera].get("away", []):
        left = entry["left_at"]["monotonic_raw_ns"]
        worth_sidecar[left] = worth_sidecar.get(left, 0) + entry["records_at_nominal_rate"]
        known = away_sidecar.get(left)
        if known is None or (known["returned_at"] is None and entry["returned_at"] is not None):
            away_sidecar[left] = entry
    camera_missing += segment.get("streams", {}).get(camera, {}).get("missing", 0)
    for entry in (segment.get("streams", {}).get(camera, {}).get("away") or []):
        left = entry["left_monotonic_raw_ns"]
        worth_index[left] = worth_index.get(left, 0) + entry["records_at_nominal_rate"]
        known = away_index.get(entry["left_monotonic_raw_ns"])
        if known is None or "returned_monotonic_raw_ns" not in known:
            away_index[entry["left_monotonic_raw_ns"]] = entry
    imu = streams[imu_id]
    imu_written += imu["written"]
    imu_dropped += imu["drops"]["count"]
    runs = imu["drops"]["records"]
    # A table of runs that filled spans all the rest with its last run, records delivered
    # between them too: only the runs before it name lost samples (the count stays exact).
    if imu["drops"].get("records_truncated"):
        print(f"{segment['directory']}: {imu_id}'s table of lost runs filled; its last run is left out of the check")
        runs = runs[:-1]
    for first, last in runs:
        imu_lost.update(range(first, last + 1))
    # The last segment's sidecar has the IMU's whole report: the periods the device itself
    # missed (the emulated hrtimer trigger skips some under TCG).
    if "iio" in imu and "timeline_gaps" in imu["iio"]:
        device_gaps = set()
        timeline = imu["iio"]["timeline_gaps"]
        runs = timeline["records"]
        device_missing = timeline["samples_missing"]
        # A filled table's last run spans all the rest: every sample from its start may be a gap.
        if timeline.get("records_truncated") and runs:
            device_gaps_from = runs[-1][0]
            runs = runs[:-1]
        for first, last in runs:
            device_gaps.update(range(first, last + 1))
    if imu["drops"]["count"]:
        print(f"{segment['directory']}: {imu_id} lost {imu['drops']['count']} samples, records {imu['drops']['records']}"
              f" (segment from {segment['start_monotonic_raw_ns']})")
    if "ended_early" in imu:
        fails.append(f"{segment['directory']}: the IMU ended: {imu['ended_early']}")
    if streams[camera]["written"] > 0:
        frames += [json.loads(line) for line in open(f"{path}/{camera}.frames.ndjson")]
        stamps += [json.loads(line) for line in open(f"{path}/{camera}.timestamps.jsonl")]
        seen += list(identities(f"{path}/{camera}.mkv", width, height))

print(f"{len(segments)} segments; {camera}: {len(seen)} frames; {imu_id}: {imu_written} samples, {imu_dropped} dropped")
for left, entry in sorted(away_sidecar.items()):
    for note in entry.get("notes", []):
        print(f"{camera} away at {left} ns: {note}")
    print(f"{camera} away at {left} ns, {entry['left_at']['seconds_after_start']:.2f} s into its segment, for {entry['seconds']:.2f} s,"
          f" {entry['records_at_nominal_rate']} frames at the nominal rate, back as {entry.get('returned_as')}")
if len(away_sidecar) != replugs:
    fails.append(f"the sidecars tell {len(away_sidecar)} times away, the camera was unplugged {replugs} times")
if len(away_index) != replugs:
    fails.append(f"the index tells {len(away_index)} times away, the camera was unplugged {replugs} times")
gaps = []
for left, entry in sorted(away_sidecar.items()):
    if entry["returned_at"] is None:
        fails.append(f"the time away from {left} has no return: {entry}")
        continue
    back = entry["returned_at"]["monotonic_raw_ns"]
    gaps.append((left, back))
    worth = round((back - left) / 1e9 * 30)
    for where, told in (("sidecars", worth_sidecar.get(left)), ("index", worth_index.get(left))):
        # One frame of rounding in each segment it reaches into.
        if told is None or abs(told - worth) > 2:
            fails.append(f"away from {left}: the {where} say {told} frames at the nominal rate, {worth} expected")
# fieldcap loses none of the IMU's samples: any missing is one the device never delivered.
if device_gaps is None:
    fails.append("no sidecar gives the IMU's timeline gaps (iio.timeline_gaps)")
elif {n for n in imu_lost - device_gaps if device_gaps_from is None or n < device_gaps_from}:
    lost = sorted(n for n in imu_lost - device_gaps if device_gaps_from is None or n < device_gaps_from)
    fails.append(f"the IMU lost samples {lost[:10]} the device delivered")
elif imu_dropped > device_missing:
    # The segments count what the timeline missed between their records, the ring's drops too.
    fails.append(f"the segments count {imu_dropped} IMU samples missing, the device's timeline {device_missing}")
else:
    print(f"{imu_id}: {len(imu_lost)} samples missing, each a period the device itself skipped"
          f" ({len(device_gaps)} in its timeline gaps)")

# Every frame against the feeders' logs: which plug made it, in order.
made = [feeder_log(log)[0] for log in logs]
plugs = []
for position, (number, clock, valid) in enumerate(seen):
    plug = next((p for p, log in enumerate(made) if log.get(number) == clock), None)
    if not valid or plug is None:
        fails.append(f"frame {position}: feeder frame {number} at {clock} is in no feeder's log (valid: {valid})")
        break
    plugs.append(plug)
if len(plugs) == len(seen) and seen:
    if plugs != sorted(plugs):
        fails.append(f"the plugs' frames are out of order: {plugs}")
    if sorted(set(plugs)) != list(range(len(logs))):
        fails.append(f"frames from plugs {sorted(set(plugs))}, wanted one or more from each of {len(logs)}")
    for a in range(len(seen) - 1):
        if plugs[a] == plugs[a + 1]:
            if seen[a + 1][0] <= seen[a][0]:
                fails.append(f"frames {a}, {a + 1}: feeder numbers {seen[a][0]}, {seen[a + 1][0]} within one plug")
                break
            if frames[a + 1]["sequence"] - frames[a]["sequence"] != seen[a + 1][0] - seen[a][0]:
                fails.append(f"frames {a}, {a + 1}: kernel sequence {frames[a]['sequence']} -> "
                             f"{frames[a + 1]['sequence']} for feeder frames {seen[a][0]} -> {seen[a + 1][0]}")
                break
    missed = sum(seen[a + 1][0] - seen[a][0] - 1 for a in range(len(seen) - 1) if plugs[a] == plugs[a + 1])
    print(f"{camera}: frames per plug {[plugs.count(p) for p in range(len(logs))]}, {missed} missed within plugs;"
          f" the index counts {camera_missing} missing")
    # The kernel's sequence restart at each return is not missing frames: the index counts exactly
    # what uvcvideo skipped within a plug.
    if camera_missing != missed:
        fails.append(f"the index counts {camera_missing} frames missing, uvcvideo skipped {missed} within plugs")
if len(stamps) != len(seen):
    fails.append(f"{len(seen)} frames decoded, {len(stamps)} timestamp lines")
for left, back in gaps:
    inside = [s["capture_ns"] for s in stamps if left < s["capture_ns"] < back]
    if inside:
        fails.append(f"{len(inside)} frames stamped inside the time away {left}..{back}")
    if not any(s["capture_ns"] >= back for s in stamps):
        fails.append(f"no frame recorded after the return at {back}")
for fail in fails:
    print("FAIL:", fail)
sys.exit(1 if fails else 0)
