#!/usr/bin/python3
"""Plays frames rendered ahead into vivid's video output at the instants they show, while
fieldcap records vivid's capture node (the S-Video loopback) beside a synthetic gyroscope that
turns as the frames do, then measures what the capture really delivered.

The frames come from a synthetic turning camera; frame k shows the turn at its stamp, and is played
to show at its stamp + AHEAD, while the gyroscope (delay=AHEAD) reads the turn at its own stamp -
AHEAD: the scene it shows is the gyroscope's at that instant. Each frame carries its number in its top left
(16 bits, a cell of 8x8 pixels each), which vivid's output scaler enlarges; each captured frame
is named by it, and its true lag is its capture_ns minus the instant its scene
shows. Prints one JSON object: frames written (and how many written over 20 ms after their
instant) and the recorder's
exit status; `measure` prints the frames captured, named, and the lags' mean, median, min and max
(ns).

Usage: vivid_loopback.py RENDERED_RAW STAMPS OUT_NODE AHEAD_NS WIDTH HEIGHT -- RECORDER...
       vivid_loopback.py measure CAPTURED_RAW SESSION WIDTH HEIGHT SCALE PLAYED_JSON
"""
import fcntl
import json
import mmap
import os
import struct
import subprocess
import sys
import time

BITS, CELL = 16, 8

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
    """An output node streamed with mmap buffers: `play` hands it a frame, waiting for a buffer
    the driver is done with when all are queued."""

    def __init__(self, path, count=4):
        self.fd = os.open(path, os.O_RDWR)
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
        if not self.free:
            buffer = bytearray(struct.pack(BUFFER, 0, OUTPUT, 0, 0, 0, 0, 0, bytes(16), 0, MMAP, 0, 0, 0, 0))
            fcntl.ioctl(self.fd, VIDIOC_DQBUF, buffer)
            self.free.append(struct.unpack(BUFFER, buffer)[0])
        index = self.free.pop(0)
        self.maps[index][:len(frame)] = frame
        buffer = bytearray(struct.pack(
            BUFFER, index, OUTPUT, len(frame), 0, FIELD_INTERLACED, 0, 0, bytes(16), 0, MMAP, 0, 0, 0, 0))
        fcntl.ioctl(self.fd, VIDIOC_QBUF, buffer)
        if not self.streaming:
            fcntl.ioctl(self.fd, VIDIOC_STREAMON, struct.pack("<i", OUTPUT))
            self.streaming = True

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
    raw, stamps_path, out_node, ahead, width, height = sys.argv[1:split]
    recorder = sys.argv[split + 1:]
    ahead, width, height = int(ahead), int(width), int(height)
    size = width * height
    stamps = [json.loads(line)["capture_ns"] for line in open(stamps_path)]
    shows = [t + ahead for t in stamps]
    with open(raw, "rb") as source:
        frames = [bytearray(source.read(size)) for _ in stamps]
    if any(len(f) != size for f in frames):
        sys.exit(f"{raw} holds fewer frames than {stamps_path} has lines")
    for number, frame in enumerate(frames):
        stamp(frame, number + 1, width)  # 0 would read as a black frame

    # The recorder starts a second and a half before the first frame shows; the output is
    # opened now.
    output = Output(out_node)
    sleep_until(shows[0] - 1_500_000_000)
    process = subprocess.Popen(recorder, stdout=sys.stderr)
    # Each frame at its instant: vivid shows it from its output's next tick (a queue kept full
    # instead let the shown frame slip a whole period mid-run).
    written = late = 0
    for frame, show in zip(frames, shows):
        sleep_until(show)
        if now_ns() - show > 20_000_000:
            late += 1
        output.play(frame)
        written += 1
    status = process.wait()
    output.close()
    print(json.dumps({"written": written, "written_late": late, "recorder_status": status, "shows": shows}))


def measure():
    """measure CAPTURED_RAW SESSION WIDTH HEIGHT SCALE PLAYED_JSON: each captured frame's lag,
    and the stretch of the session (seconds from its sync point) in which played frames came
    through, less half a second at its start and a frame at its end (after the last frame played,
    vivid shows it on and on: the scene stops while the gyroscope turns)."""
    raw, session, width, height, scale, played = sys.argv[2:8]
    width, height, scale = int(width), int(height), int(scale)
    shows = json.load(open(played))["shows"]
    origin = json.load(open(f"{session}/sync_point.json"))["monotonic_ns"]
    stamps = [json.loads(line)["capture_ns"] for line in open(f"{session}/cam.timestamps.jsonl")]
    seen = []
    with open(raw, "rb") as source:
        for capture_ns in stamps:
            frame = source.read(width * height)
            if len(frame) < width * height:
                break
            number = read_number(frame, width, scale)
            # The last frame played stays on: its captures after the first are not its lag.
            if number is None or not 1 <= number < len(shows):
                continue
            seen.append((capture_ns, capture_ns - shows[number - 1]))
    result = {"captured": len(stamps), "named": len(seen)}
    if seen:
        start = (seen[0][0] - origin) / 1e9 + 0.5
        end = (seen[-1][0] - origin) / 1e9 - 0.04
        lags = sorted(lag for capture_ns, lag in seen if start <= (capture_ns - origin) / 1e9 <= end)
        result.update({
            "from_s": round(start, 3), "to_s": round(end, 3), "lags": len(lags),
            "lag_mean_ns": int(sum(lags) / len(lags)), "lag_median_ns": lags[len(lags) // 2],
            "lag_min_ns": lags[0], "lag_max_ns": lags[-1],
        })
    print(json.dumps(result))


if __name__ == "__main__":
    measure() if sys.argv[1] == "measure" else main()
