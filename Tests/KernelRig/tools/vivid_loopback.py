#!/usr/bin/python3
"""Plays frames rendered ahead into vivid's video output at the instants they show, while
fieldcap records vivid's capture node (the S-Video loopback) beside a synthetic gyroscope that
turns as the frames do, then measures what the capture really delivered.

The frames come from a synthetic turning camera; frame k shows the turn at its stamp, and is played
to show at its stamp + AHEAD (AHEAD chosen once the frames are loaded: the first shows 3 s later),
while the gyroscope (the recorder's `{delay_ms}` replaced by AHEAD) reads the turn at its own
stamp - AHEAD: the scene it shows is the gyroscope's at that instant. Each frame carries its number
in its top left (16 bits, a cell of 8x8 pixels each); each captured frame is named by it, and its
true lag is its capture_ns minus the instant its scene shows. The recorder is ended with SIGINT
0.3 s after the last frame. Prints one JSON object: frames written, skipped (the driver had not
taken the one before), passed over (their instant had gone when the loop came to them), the
recorder's exit status, AHEAD and each frame's instant; `measure` prints the frames captured,
named, and the lags' mean, median, min and max (ns).

Usage: vivid_loopback.py RENDERED_RAW STAMPS OUT_NODE WIDTH HEIGHT -- RECORDER...
       vivid_loopback.py measure CAPTURED_RAW SESSION WIDTH HEIGHT SCALE PLAYED_JSON
"""
import fcntl
import json
import mmap
import os
import shutil
import struct
import signal
import subprocess
import sys
import time

BITS, CELL = 16, 8
LEAD_NS, TAIL_NS = 3_000_000_000, 300_000_000
STEADY_NS = 90_000_000

# The V4L2 calls, as <linux/videodev2.h> lays them out on a 64-bit machine: vb2's write() path
# queues output buffers with no payload on 6.12 (vivid refuses them), so the frames go through
# mmap streaming as any V4L2 output program's do.
REQUESTBUFFERS = "<IIIIB3x"  # count, type, memory, capabilities, flags
BUFFER = "<IIIII4xqq16sIIQIII4x"  # index, type, bytesused, flags, field, timeval, timecode, sequence,
#                                   memory, m.offset (8 with padding), length, reserved2, request_fd


def ioc(direction, number, size):
    return direction << 30 | size << 16 | ord("V") << 8 | number


VIDIOC_REQBUFS = ioc(3, 8, struct.calcsize(REQUESTBUFFERS))
VIDIOC_QUERYBUF = ioc(3, 9, struct.calcsize(BUFFER))
VIDIOC_QBUF = ioc(3, 15, struct.calcsize(BUFFER))
VIDIOC_DQBUF = ioc(3, 17, struct.calcsize(BUFFER))
VIDIOC_STREAMON = ioc(1, 18, 4)
VIDIOC_STREAMOFF = ioc(1, 19, 4)
OUTPUT, MMAP, FIELD_INTERLACED = 2, 1, 4


class Output:
    """An output node streamed with mmap buffers. vivid shows the first buffer of its queue and
    retires it at the next tick that finds another behind it, so `play` keeps at most one frame
    waiting behind the one shown: when the driver has not yet taken the last one (it runs slowly
    on a busy host), the frame is skipped rather than queued, so that what vivid shows is never
    more than a tick older than its instant, however slowly it runs."""

    def __init__(self, path, count=4):
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        request = bytearray(struct.pack(REQUESTBUFFERS, count, OUTPUT, MMAP, 0, 0))
        fcntl.ioctl(self.fd, VIDIOC_REQBUFS, request)
        count = struct.unpack(REQUESTBUFFERS, request)[0]
        self.maps, self.free, self.streaming = [], list(range(count)), False
        for index in range(count):
            buffer = bytearray(struct.pack(BUFFER, index, OUTPUT, 0, 0, 0, 0, 0, bytes(16), 0, MMAP, 0, 0, 0, 0))
            fcntl.ioctl(self.fd, VIDIOC_QUERYBUF, buffer)
            fields = struct.unpack(BUFFER, buffer)
            offset, length = fields[10], fields[11]
            self.maps.append(mmap.mmap(self.fd, length, mmap.MAP_SHARED, mmap.PROT_WRITE, offset=offset & 0xFFFFFFFF))

    def play(self, frame):
        """Queues the frame, or returns False (skipped) when one is still waiting to be shown."""
        while len(self.free) < len(self.maps):
            buffer = bytearray(struct.pack(BUFFER, 0, OUTPUT, 0, 0, 0, 0, 0, bytes(16), 0, MMAP, 0, 0, 0, 0))
            try:
                fcntl.ioctl(self.fd, VIDIOC_DQBUF, buffer)
            except BlockingIOError:
                break
            self.free.append(struct.unpack(BUFFER, buffer)[0])
        if len(self.maps) - len(self.free) >= 2:
            return False
        index = self.free.pop(0)
        self.maps[index][:len(frame)] = frame
        buffer = bytearray(struct.pack(
            BUFFER, index, OUTPUT, len(frame), 0, FIELD_INTERLACED, 0, 0, bytes(16), 0, MMAP, 0, 0, 0, 0))
        fcntl.ioctl(self.fd, VIDIOC_QBUF, buffer)
        if not self.streaming:
            fcntl.ioctl(self.fd, VIDIOC_STREAMON, struct.pack("<i", OUTPUT))
            self.streaming = True
        return True

    def close(self):
        if self.streaming:
            fcntl.ioctl(self.fd, VIDIOC_STREAMOFF, struct.pack("<i", OUTPUT))
        for m in self.maps:
            m.close()
        os.close(self.fd)


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)


def sleep_until(ns):
    while True:
        left = ns - now_ns()
        if left <= 0:
            return
        time.sleep(min(left / 1e9, 0.05))


def capturing(session, streams, until_ns):
    """Whether the `streams` streams of the recorder writing `session` have a timestamp line each
    by `until_ns` (each file appears with its first lines)."""
    while True:
        try:
            names = [n for n in os.listdir(session) if n.endswith(".timestamps.jsonl")]
            if len(names) >= streams and all(os.path.getsize(os.path.join(session, n)) > 0 for n in names):
                return True
        except OSError:
            pass
        if now_ns() >= until_ns:
            return False
        time.sleep(0.05)


def stamp(frame, number, width):
    """The number into the frame's top left: a cell of 8x8 pixels a bit, white for 1, black for
    0, most significant first, along the top."""
    for bit in range(BITS):
        value = bytes([255 if number >> (BITS - 1 - bit) & 1 else 0]) * CELL
        for row in range(CELL):
            start = row * width + bit * CELL
            frame[start:start + CELL] = value


def read_number(frame, width, scale):
    """The number a captured frame carries (its cells `scale` times larger: vivid's output
    scaler), or None when its pixels are not one (vivid's own pattern)."""
    number, size = 0, CELL * scale
    for bit in range(BITS):
        pixels = [frame[y * width + bit * size + x] for y in range(2, size - 2, 2) for x in range(2, size - 2, 2)]
        if all(p >= 200 for p in pixels):
            number = number << 1 | 1
        elif all(p <= 55 for p in pixels):
            number <<= 1
        else:
            return None
    return number


def main():
    split = sys.argv.index("--")
    raw, stamps_path, out_node, width, height = sys.argv[1:split]
    recorder = sys.argv[split + 1:]
    width, height = int(width), int(height)
    size = width * height
    stamps = [json.loads(line)["capture_ns"] for line in open(stamps_path)]
    with open(raw, "rb") as source:
        frames = [bytearray(source.read(size)) for _ in stamps]
        extra = source.read(1)
    # One frame for each line, exactly: FFmpeg's default frame-rate conversion duplicates a frame
    # where the stamps jitter (decode with -fps_mode passthrough), which shifted every later
    # frame's content a period against its stamp and made the truth a frame short.
    if any(len(f) != size for f in frames) or extra:
        sys.exit(f"{raw} does not hold one frame for each line of {stamps_path}")
    for number, frame in enumerate(frames):
        stamp(frame, number + 1, width)  # 0 would read as a black frame
    output = Output(out_node)

    # The instants are chosen only now that everything is loaded (starting Python alone takes
    # seconds on a busy emulated machine): the first frame shows LEAD from now, and the recorder,
    # started now, is told the delay. A recorder not capturing half a second before the first
    # instant (a starved guest took 30 s once) is stopped, its session removed, and started again
    # with twice the lead: the scene must not play to nobody.
    out = recorder[recorder.index("--out") + 1]
    lead = LEAD_NS
    for attempt in range(4):
        ahead = now_ns() + lead - stamps[0]
        shows = [t + ahead for t in stamps]
        command = [word.replace("{delay_ms}", f"{ahead / 1e6:.3f}") for word in recorder]
        process = subprocess.Popen(command, stdout=sys.stderr)
        streams = sum(word in ("--cam", "--imu") for word in recorder)
        if capturing(out, streams, until_ns=shows[0] - 500_000_000) or attempt == 3:
            break
        process.send_signal(signal.SIGINT)
        process.wait()
        shutil.rmtree(out, ignore_errors=True)
        print(f"NOTE: the recorder was not capturing {lead / 1e9:.0f} s after its start; again with a lead of"
              f" {2 * lead / 1e9:.0f} s", file=sys.stderr)
        lead *= 2
    # At each frame's instant the frame due now is played (a late loop skips the frames whose
    # instant has passed, rather than showing them late): vivid shows it from its output's next
    # tick. A queue kept full instead let the shown frame slip a whole period mid-run.
    written = late = skipped = 0
    k = 0
    while k < len(frames):
        sleep_until(shows[k])
        now = now_ns()
        while k + 1 < len(frames) and shows[k + 1] <= now:
            k, late = k + 1, late + 1
        if output.play(frames[k]):
            written += 1
        else:
            skipped += 1
        k += 1
    # The recorder ends a little after the last frame (its --duration only a cap).
    sleep_until(shows[-1] + TAIL_NS)
    process.send_signal(signal.SIGINT)
    status = process.wait()
    output.close()
    print(json.dumps({"written": written, "skipped": skipped, "passed_late": late, "recorder_status": status,
                      "ahead_ns": ahead, "shows": shows}))


def measure():
    """measure CAPTURED_RAW SESSION WIDTH HEIGHT SCALE PLAYED_JSON: each captured frame's lag, and
    the stretches of the session (seconds from its sync point) to analyse: `whole`, where played
    frames came through (less half a second at its start and a frame at its end: after the last
    frame played, vivid shows it on and on, the scene stopped while the gyroscope turns), and
    `steady`, the longest run of frames inside it in which vivid kept up: no frame lost by its
    sequence numbers, each showing the played frame after the one before (none shown twice or
    skipped), and every frame showing one played at most STEADY_NS before the lowest lags
    (vivid shows a frame from its next output tick, so the lag moves within a frame period or so;
    on a starved host a frame is held for several, or the scene rendered ahead has gaps, and there
    the scene stops while the gyroscope turns)."""
    raw, session, width, height, scale, played = sys.argv[2:8]
    width, height, scale = int(width), int(height), int(scale)
    shows = json.load(open(played))["shows"]
    origin = json.load(open(f"{session}/sync_point.json"))["monotonic_ns"]
    stamps = [json.loads(line)["capture_ns"] for line in open(f"{session}/cam.timestamps.jsonl")]
    sequences = [json.loads(line)["sequence"] for line in open(f"{session}/cam.frames.ndjson")]
    seen = []  # (capture_ns, lag, kernel sequence, the played frame's number)
    if os.path.getsize(raw) != len(stamps) * width * height:
        sys.exit(f"{raw} does not hold one frame for each line of the session's cam.timestamps.jsonl"
                 " (decode it with -fps_mode passthrough)")
    with open(raw, "rb") as source:
        for capture_ns, sequence in zip(stamps, sequences):
            frame = source.read(width * height)
            if len(frame) < width * height:
                break
            number = read_number(frame, width, scale)
            # The last frame played stays on: its captures after the first are not its lag.
            if number is None or not 1 <= number < len(shows):
                continue
            seen.append((capture_ns, capture_ns - shows[number - 1], sequence, number))

    def seconds(capture_ns):
        return (capture_ns - origin) / 1e9

    def stretch(frames):
        lags = sorted(frame[1] for frame in frames)
        return {"from_s": round(seconds(frames[0][0]), 3), "to_s": round(seconds(frames[-1][0]), 3),
                "lags": len(lags), "lag_mean_ns": int(sum(lags) / len(lags)),
                "lag_median_ns": lags[len(lags) // 2], "lag_min_ns": lags[0], "lag_max_ns": lags[-1]}

    result = {"captured": len(stamps), "named": len(seen)}
    start, end = (seconds(seen[0][0]) + 0.5, seconds(seen[-1][0]) - 0.04) if seen else (0, 0)
    inside = [f for f in seen if start <= seconds(f[0]) <= end]
    if inside:
        result["whole"] = stretch(inside)
        lowest = sorted(frame[1] for frame in inside)[len(inside) // 10]
        runs, run = [], []
        for frame in inside:
            # Broken by a frame lost, one shown long after its instant, or a played frame shown
            # twice or skipped (vivid's output tick and the writes, both at 25 fps, drift past
            # each other: the scene then stops for a frame, or jumps, while the gyroscope turns).
            if frame[1] > lowest + STEADY_NS or (
                    run and (frame[2] != run[-1][2] + 1 or frame[3] != run[-1][3] + 1)):
                runs.append(run)
                run = []
            if frame[1] <= lowest + STEADY_NS:
                run.append(frame)
        runs.append(run)
        longest = max(runs, key=len)
        if len(longest) >= 2:
            result["steady"] = stretch(longest)
            result["steady"]["seconds"] = round(seconds(longest[-1][0]) - seconds(longest[0][0]), 3)
    print(json.dumps(result))


if __name__ == "__main__":
    measure() if sys.argv[1] == "measure" else main()
