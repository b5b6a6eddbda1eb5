"""The guest side of the slow-disk tests (fieldcap_slow_disk.sh, fieldcap_disk_stall.sh), run in
the kernel rig's guest, whose scratch disk QEMU throttles; the host's disk_monitor.py changes the
throttle when this script asks it to (files in STATE_DIR, a 9p share).

    slow_disk_guest.py throttle STATE_DIR FIELDCAP MBPS...
    slow_disk_guest.py stall STATE_DIR FIELDCAP MBPS

For each rate, records issue 28's experiment twice: two synthetic 640x480 YUYV cameras at 30 fps
and a 1 kHz synthetic IMU, then the two vivid cameras (640x480 YUYV, 30 fps) and the IIO dummy at
1 kHz through the rig's hrtimer trigger; 36.9 MB/s of video either way, far more than the disk
takes. In `stall` mode, some seconds into each recording the host stops the disk's writes for
3 s, and the recording is longer.

Each session must: end with exit 0 (no stream ended early: a camera whose buffers all wait for
the disk has not stalled); validate; lose no IMU sample in fieldcap (0 dropped; the IIO dummy's
samples read all written, the synthetic IMU's at its rate); hold in each video exactly the
frames its timestamps and fieldcap.json count, numbered by their index; account for every
camera frame (the frame log's sequence numbers, fieldcap's drops and the driver's sequence gaps
are disjoint and together cover the camera's whole sequence); and the summary on stderr and the
--json status lines must say the same as fieldcap.json. In `throttle` mode the session's files
must get most of the disk's rate; in `stall` mode the sidecar and the status lines must name the
stalled files. In `stall` mode a third recording, the synthetic one in 3 s segments, must also
name the stalled files (as SEGMENT/FILE) in its status lines, its stop line and its segments'
fieldcap.json, and lose no IMU sample. The figures go to STATE_DIR/result-MODE.json.
"""
import glob
import json
import os
import subprocess
import sys
import time

mode, state, fieldcap, rates = sys.argv[1], sys.argv[2], sys.argv[3], [float(r) for r in sys.argv[4:]]
disk = os.environ["FIELDCAP_DISK_DIR"]
SECONDS = 10 if mode == "throttle" else 12
# The stall begins about this long after the first IMU line (asked for then; the host acts at
# once), and lasts this long.
STALL_AFTER = 4.0
STALL = 3
# The IMU's ring (Recorder.Options.ringCapacity): what it may hold while its writer waits.
IMU_RING = 4096
# In throttle mode the session's files must get at least this share of the disk's rate (the
# rest is ext4's journal and metadata, start-up and the stop). The videos get what the IMU's
# lines leave (0.4 MB/s at 1 kHz: a fifth of 2 MB/s).
MIN_DISK_SHARE = 0.75
failures = []
requests = 0


def ask_host(request, wait=True):
    """Asks disk_monitor.py on the host to change the disk; returns the request's number."""
    global requests
    requests += 1
    with open(f"{state}/request-{requests}.tmp", "w") as f:
        json.dump(request, f)
    os.rename(f"{state}/request-{requests}.tmp", f"{state}/request-{requests}")
    deadline = time.monotonic() + 60 + request.get("stall", 0)
    while wait and not os.path.exists(f"{state}/done-{requests}"):
        if time.monotonic() > deadline:
            sys.exit(f"the host did not answer request {requests}: {request}")
        time.sleep(0.05)
    return requests


def fail(message):
    print("FAIL:", message)
    failures.append(message)


def frames_in(video):
    # Packets, not decoded frames: each frame is one packet, and demuxing alone reads less.
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
                            "stream=nb_read_packets", "-of", "csv=p=0", video], capture_output=True, text=True)
    return int(probe.stdout.strip() or 0)


def lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def runs_to_set(runs):
    return {n for first, last in runs for n in range(first, last + 1)}


def record(kind, mbps):
    out = f"{disk}/{kind}"
    if kind in ("synthetic", "segments"):
        devices = ["--cam", "synthetic:640x480@30,id=cam0", "--cam", "synthetic:640x480@30,id=cam1",
                   "--imu", "synthetic:1000,id=imu"] + (["--segment", "3s"] if kind == "segments" else [])
    else:
        for dev in (os.environ["FIELDCAP_VIDEO_DEVICE"], os.environ["FIELDCAP_VIDEO_DEVICE2"]):
            subprocess.run(["v4l2-ctl", "-d", dev, "-c", "timestamp_source=1"], check=True)
        devices = ["--cam", f"{os.environ['FIELDCAP_VIDEO_DEVICE']},size=640x480,fps=30,id=cam0",
                   "--cam", f"{os.environ['FIELDCAP_VIDEO_DEVICE2']},size=640x480,fps=30,id=cam1",
                   "--imu", f"{os.environ['FIELDCAP_IIO_DEVICE']},rate=1000,trigger={os.environ['FIELDCAP_IIO_TRIGGER']},"
                   "channels=voltage0+accel_x,id=imu"]
    args = [fieldcap] + devices + ["--duration", f"{SECONDS}s", "--out", out, "--json"]
    with open(f"{state}/{kind}.status.jsonl", "w") as stdout, open(f"{state}/{kind}.stderr", "w") as stderr:
        process = subprocess.Popen(args, stdout=stdout, stderr=stderr)
        if mode == "stall":
            # From the first IMU line on: under emulation fieldcap takes seconds to start.
            while process.poll() is None and not glob.glob(f"{out}/imu.timestamps.jsonl") \
                    and not glob.glob(f"{out}/*/imu.timestamps.jsonl"):
                time.sleep(0.05)
            time.sleep(STALL_AFTER)
            stall_request = ask_host({"stall": STALL, "bps": int(mbps * 1e6)}, wait=False)
        else:
            stall_request = None
        status = process.wait(timeout=SECONDS + 120)
    return out, status, stall_request


def check(kind, mbps, out, status, stall_request):
    print(f"--- {kind}, {mbps:g} MB/s{' with a stall' if mode == 'stall' else ''}")
    stderr = open(f"{state}/{kind}.stderr").read()
    if status != 0:
        fail(f"{kind}: fieldcap exited {status}: {stderr[-600:]}")
    valid = subprocess.run([fieldcap, "validate", "-q", out], capture_output=True, text=True)
    if valid.returncode != 0:
        fail(f"{kind}: the session does not validate: {valid.stdout[-600:]}")
    info = json.load(open(f"{out}/fieldcap.json"))
    streams = {s["id"]: s for s in info["streams"]}
    result = {"kind": kind, "mode": mode, "mbps": mbps}

    # The IMU: nothing lost in fieldcap.
    imu = streams["imu"]
    stamps = lines(f"{out}/imu.timestamps.jsonl")
    if imu["drops"]["count"] != 0:
        fail(f"{kind}: fieldcap dropped {imu['drops']['count']} IMU samples ({imu['drops']['records'][:4]})")
    if len(stamps) != imu["written"] or [s["frame_number"] for s in stamps] != list(range(len(stamps))):
        fail(f"{kind}: imu.timestamps.jsonl holds {len(stamps)} lines numbered otherwise than 0..{imu['written'] - 1}")
    if kind == "synthetic":
        if imu["written"] < 0.9 * SECONDS * 1000:
            fail(f"{kind}: only {imu['written']} IMU samples in {SECONDS} s at 1 kHz")
    else:
        # Samples the buffer held from before the start are left out, and counted apart.
        read = imu["iio"]["samples_read"] - imu["iio"]["samples_before_start"]
        if imu["written"] != read:
            fail(f"{kind}: {read} IMU samples read from the device since the start, {imu['written']} written")
        # The emulated hrtimer misses ticks (a few percent alone, tens of percent beside two
        # vivid cameras under emulation): counted, not fieldcap's, and no rate is asserted.
        result["imu_timeline_gaps"] = imu["iio"]["timeline_gaps"]["samples_missing"]
    result["imu_written"] = imu["written"]
    result["imu_dropped"] = imu["drops"]["count"]

    # The status lines: what they said never exceeds the end, and the IMU's ring never filled.
    # The progress lines, between --json's start and stop lines.
    status_lines = [line for line in (json.loads(text) for text in open(f"{state}/{kind}.status.jsonl") if text.startswith("{"))
                    if line.get("event") == "progress"]
    if not status_lines:
        fail(f"{kind}: no --json status line")
    imu_queued = max((next(s["queued"] for s in line["streams"] if s["id"] == "imu") for line in status_lines), default=0)
    result["imu_ring_max"] = imu_queued
    if imu_queued >= IMU_RING:
        fail(f"{kind}: the IMU's ring filled ({imu_queued} records waiting)")
    for line in status_lines:
        for s in line["streams"]:
            final = streams[s["id"]]
            if s["written"] > final["written"] or s["dropped"] > final["drops"]["count"]:
                fail(f"{kind}: a status line said {s} beyond the end ({final['written']} written)")
                break
            if "v4l2" in final and s.get("device_gaps", -1) > final["v4l2"]["kernel_sequence_gaps"]["count"]:
                fail(f"{kind}: a status line said {s['device_gaps']} frames skipped, more than the end's")
                break

    # The cameras: every frame accounted for, and the video, lines and counts agree.
    video_bytes = 0
    for cam in ("cam0", "cam1"):
        stream = streams[cam]
        video = f"{out}/{cam}.mkv"
        video_bytes += os.path.getsize(video)
        frames = frames_in(video)
        cam_stamps = lines(f"{out}/{cam}.timestamps.jsonl")
        logged = [line["sequence"] for line in lines(f"{out}/{cam}.frames.ndjson")]
        dropped = runs_to_set(stream["drops"]["records"])
        skipped = runs_to_set(stream["v4l2"]["kernel_sequence_gaps"]["records"]) if "v4l2" in stream else set()
        if stream["drops"]["count"] != len(dropped) or ("v4l2" in stream and stream["v4l2"]["kernel_sequence_gaps"]["count"] != len(skipped)):
            fail(f"{cam}: the counts in fieldcap.json differ from their runs")
        if not frames == len(cam_stamps) == len(logged) == stream["written"]:
            fail(f"{kind} {cam}: {frames} frames in the video, {len(cam_stamps)} timestamp lines, {len(logged)} logged, "
                 f"{stream['written']} written in fieldcap.json")
        if [s["frame_number"] for s in cam_stamps] != list(range(len(cam_stamps))):
            fail(f"{kind} {cam}: frame_number is not the frame's index in the video")
        # vivid numbers two frames alike when its thread wakes twice within one frame period
        # (its count is rounded from jiffies): such a repeat follows its twin in the log.
        repeats = sum(1 for a, b in zip(logged, logged[1:]) if a == b)
        everything = set(logged) | dropped | skipped
        if len(set(logged)) + repeats != len(logged) or skipped & (set(logged) | dropped) \
                or set(logged) & dropped or everything != set(range(max(everything) + 1)):
            twice = sorted((set(logged) & (dropped | skipped)) | (dropped & skipped))
            holes = sorted(set(range(max(everything) + 1)) - everything)
            fail(f"{kind} {cam}: frames written, dropped and skipped overlap at {twice[:10]}, leave holes at "
                 f"{holes[:10]}, or the log repeats a sequence number apart from its twin")
            print(f"{cam} frame log's sequence numbers: {logged}; skipped: {sorted(skipped)}")
        result.setdefault("repeated_sequence_numbers", {})[cam] = repeats
        if frames < SECONDS * 0.5:
            fail(f"{kind} {cam}: only {frames} frames in {SECONDS} s")
        # The summary says the same.
        summary = f"  {cam}: {stream['written']} written ("
        line = next((l for l in stderr.splitlines() if l.startswith(summary)), None)
        if line is None or f", {stream['drops']['count']} dropped" not in line \
                or (skipped and f", {len(skipped)} skipped by the device" not in line):
            fail(f"{kind} {cam}: the summary line '{line}' does not say what fieldcap.json says")
        result[cam] = {"written": stream["written"], "dropped": len(dropped), "skipped": len(skipped)}

    started = time.mktime(time.strptime(info["started_utc"][:19], "%Y-%m-%dT%H:%M:%S")) + float("0." + info["started_utc"][20:23])
    stopped = time.mktime(time.strptime(info["stopped_utc"][:19], "%Y-%m-%dT%H:%M:%S")) + float("0." + info["stopped_utc"][20:23])
    rate = video_bytes / 1e6 / (stopped - started)
    result["video_mbps"] = round(rate, 2)
    session_bytes = sum(os.path.getsize(f"{out}/{name}") for name in os.listdir(out))
    disk_rate = session_bytes / 1e6 / (stopped - started)
    result["session_mbps"] = round(disk_rate, 2)
    print(f"{kind}: IMU {imu['written']} written, {imu['drops']['count']} dropped, its ring at most {imu_queued} records; "
          + "; ".join(f"{c} {result[c]['written']} written, {result[c]['dropped']} dropped, {result[c]['skipped']} skipped"
                      for c in ("cam0", "cam1"))
          + f"; video {rate:.2f} MB/s, all files {disk_rate:.2f} MB/s over {stopped - started:.1f} s "
          + f"({rate / mbps:.0%} and {disk_rate / mbps:.0%} of the disk's {mbps:g})")
    if mode == "throttle" and disk_rate < MIN_DISK_SHARE * mbps:
        fail(f"{kind}: the session's files got {disk_rate:.2f} MB/s of the disk's {mbps:g}")

    # A stall is reported: in the sidecar, with its files, and in the status lines while it lasts.
    if "disk_stalls" not in info:
        fail(f"{kind}: fieldcap.json does not say whether the disk stalled")
    stalls = info.get("disk_stalls", {}).get("files", [])
    result["disk_stalls"] = stalls
    if mode == "stall":
        if not os.path.exists(f"{state}/done-{stall_request}"):
            fail(f"{kind}: the host did not stall the disk")
        longest = max((s["longest_seconds"] for s in stalls), default=0)
        print(f"{kind}: stalls in fieldcap.json: " + ", ".join(f"{s['file']} {s['operation']} {s['longest_seconds']:.2f} s" for s in stalls))
        if longest < 2:
            fail(f"{kind}: fieldcap.json reports no stall of 2 s or more: {stalls}")
        # Shown while it lasts, or at the latest once it ended: under emulation the main thread
        # can miss the stall's 2 s between 1 s in and its end (it pages in code over 9p).
        shown = [s for line in status_lines for s in line["disk_stalls"] if s["seconds"] >= 1]
        print(f"{kind}: the status lines showed it {'while it lasted' if any(s['ongoing'] for s in shown) else 'once it ended'}")
        if not shown:
            fail(f"{kind}: no status line showed the stall")
        if any(s["first_at_seconds"] < 0 or s["first_at_seconds"] > SECONDS + 5 for s in stalls):
            fail(f"{kind}: a stall's time is outside the recording: {stalls}")
    return result


def check_segments(kind, mbps, out, status, stall_request):
    """The stall while recording in segments: each segment's session times its own files."""
    print(f"--- {kind}, {mbps:g} MB/s with a stall")
    stderr = open(f"{state}/{kind}.stderr").read()
    if status != 0:
        fail(f"{kind}: fieldcap exited {status}: {stderr[-600:]}")
    valid = subprocess.run([fieldcap, "validate", "-q", out], capture_output=True, text=True)
    if valid.returncode != 0:
        fail(f"{kind}: the recording does not validate: {valid.stdout[-600:]}")
    if not os.path.exists(f"{state}/done-{stall_request}"):
        fail(f"{kind}: the host did not stall the disk")
    index = json.load(open(f"{out}/recording.json"))
    imu_missing = sum(s["streams"]["imu"]["missing"] for s in index["segments"])
    imu_written = sum(s["streams"]["imu"]["records"] for s in index["segments"])
    if imu_missing != 0:
        fail(f"{kind}: {imu_missing} IMU samples missing across the segments")
    stalls = []
    for segment in index["segments"]:
        info = json.load(open(f"{out}/{segment['directory']}/fieldcap.json"))
        stalls += [dict(s, segment=segment["directory"]) for s in info["disk_stalls"]["files"]]
    print(f"{kind}: {len(index['segments'])} segments, IMU {imu_written} written, {imu_missing} missing; stalls in the "
          "segments' fieldcap.json: " + ", ".join(f"{s['segment']}/{s['file']} {s['operation']} {s['longest_seconds']:.2f} s" for s in stalls))
    if max((s["longest_seconds"] for s in stalls), default=0) < 2:
        fail(f"{kind}: no segment's fieldcap.json reports a stall of 2 s or more")
    events = [json.loads(t) for t in open(f"{state}/{kind}.status.jsonl") if t.startswith("{")]
    shown = [s for line in events if line.get("event") == "progress" for s in line["disk_stalls"] if s["seconds"] >= 1]
    print(f"{kind}: the status lines showed " + ", ".join(sorted({s["file"] for s in shown})))
    if not shown or not all("/" in s["file"] for s in shown):
        fail(f"{kind}: the status lines did not show the stall as SEGMENT/FILE: {shown[:4]}")
    stop = next((line for line in events if line.get("event") == "stop"), {})
    if max((s["longest_seconds"] for s in stop.get("disk_stalls", [])), default=0) < 2:
        fail(f"{kind}: the stop line does not report the stall: {stop.get('disk_stalls')}")
    return {"kind": kind, "mode": mode, "mbps": mbps, "imu_written": imu_written, "imu_missing": imu_missing,
            "disk_stalls": stalls}


results = []
for mbps in rates:
    if mode == "throttle":
        # What the last recording left for writeback goes out first, at the old rate.
        subprocess.run(["sync"])
        ask_host({"bps": int(mbps * 1e6)})
    for kind in ("synthetic", "vivid") + (("segments",) if mode == "stall" else ()):
        out, status, stall_request = record(kind, mbps)
        checked = check_segments if kind == "segments" else check
        results.append(checked(kind, mbps, out, status, stall_request))
        subprocess.run(["rm", "-rf", out])
with open(f"{state}/result-{mode}.json", "w") as f:
    json.dump(results, f)
sys.exit(1 if failures else 0)
