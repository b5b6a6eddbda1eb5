"""Checks a fieldcap session's UVC gadget cameras against the feeder's own log (tools/uvc-feeder.c).

    uvc_check.py SESSION ID:WIDTHxHEIGHT:FEEDER_LOG...

For each camera: FFmpeg decodes every frame of ID.mkv (as stored: no frame repeated to keep a
constant rate), and the identity cells the feeder drew in its top rows give the frame's number
and the feeder's CLOCK_MONOTONIC_RAW reading as it made the frame. Required: every cell word checks; every frame is one the feeder queued, with the
clock reading it logged; numbers strictly increase (nothing duplicated or reordered); the
kernel's sequence numbers (ID.frames.ndjson) advance exactly as the feeder's numbers do, so a
sequence gap is exactly the frames uvcvideo missed; and capture_ns lies between the moment the
feeder queued the frame and the moment the gadget gave its buffer back, within uncertainty_ns.
Prints the frames missed and capture_ns's error against the moment the feeder queued the frame.
"""

import json
import statistics
import subprocess
import sys

CELL, PER_ROW, BITS = 16, 16, 128
BUFFERS = 4  # the feeder's buffers


def identities(video, width, height):
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", video, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "-"],
        check=True, capture_output=True,
    ).stdout
    size = width * height
    cell_width = width // PER_ROW
    for start in range(0, len(raw) - size + 1, size):
        bits = 0
        for bit in range(BITS):
            y = (bit // PER_ROW) * CELL + CELL // 2
            x = (bit % PER_ROW) * cell_width + cell_width // 2
            bits = bits << 1 | (raw[start + y * width + x] > 125)
        frame, clock, check = bits >> 96, (bits >> 32) & (2**64 - 1), bits & 0xFFFFFFFF
        valid = check == frame ^ (clock >> 32) ^ (clock & 0xFFFFFFFF) ^ 0xA5A5A5A5
        yield frame, clock, valid


def pts_read(path):
    """Each frame's PTS reading as the feeder logged it: between two CLOCK_MONOTONIC_RAW readings
    (earliest, latest)."""
    read = {}
    for line in open(path):
        words = line.split()
        if words[0] == "queued" and len(words) > 5:
            read[int(words[1])] = (int(words[5]), int(words[4]))
    return read


def feeder_log(path):
    made, queued, sent = {}, {}, {}
    for line in open(path):
        words = line.split()
        if words[0] == "queued":
            made[int(words[1])] = int(words[2])
            queued[int(words[1])] = int(words[4])
        elif words[0] == "sent" and int(words[1]) not in sent:
            sent[int(words[1])] = int(words[2])
    return made, queued, sent


def check(session, stream, width, height, log):
    fails = []
    made, queued, sent = feeder_log(log)
    frames = [json.loads(line) for line in open(f"{session}/{stream}.frames.ndjson")]
    stamps = [json.loads(line) for line in open(f"{session}/{stream}.timestamps.jsonl")]
    seen = list(identities(f"{session}/{stream}.mkv", width, height))
    print(f"{stream}: {len(seen)} frames in the video, {len(stamps)} stamped, the feeder queued {len(queued)}")
    if len(seen) != len(stamps) or len(stamps) != len(frames):
        return [f"{stream}: {len(seen)} frames decoded, {len(stamps)} timestamp lines, {len(frames)} frame log lines"]
    if len(seen) < 10:
        return [f"{stream}: only {len(seen)} frames"]
    bad = [index for index, (_, _, valid) in enumerate(seen) if not valid]
    if bad:
        return [f"{stream}: frames {bad[:5]} do not carry a valid identity (check word)"]
    numbers = [frame for frame, _, _ in seen]
    for index, (frame, clock, _) in enumerate(seen):
        if made.get(frame) != clock:
            fails.append(f"{stream}: frame {index} says feeder frame {frame} at {clock}, the feeder logged {made.get(frame)}")
            break
    if any(b <= a for a, b in zip(numbers, numbers[1:])):
        fails.append(f"{stream}: feeder frames out of order or repeated: {numbers[:40]}")
    for index, (line, number) in enumerate(zip(frames, numbers)):
        if line["sequence"] - frames[0]["sequence"] != number - numbers[0]:
            fails.append(f"{stream}: frame {index}: kernel sequence {line['sequence']} for feeder frame {number}"
                         f" (first: {frames[0]['sequence']} for {numbers[0]})")
            break
    missed = numbers[-1] - numbers[0] + 1 - len(numbers)
    errors, outside, unsent = [], 0, 0
    for stamp, number in zip(stamps, numbers):
        capture, uncertainty = stamp["capture_ns"], stamp["uncertainty_ns"]
        if number not in queued:
            return fails + [f"{stream}: feeder frame {number} is in the video but not queued in the feeder's log"]
        errors.append((capture - queued[number]) / 1e6)
        if number not in sent:
            unsent += 1
        if capture + uncertainty < queued[number] or (number in sent and capture - uncertainty > sent[number]):
            outside += 1
    if outside:
        fails.append(f"{stream}: {outside} frames stamped outside [queued, sent] by more than their uncertainty")
    # Only the buffers still at the gadget when the stream stopped lack a "sent" line.
    if unsent > BUFFERS:
        fails.append(f"{stream}: {unsent} recorded frames have no 'sent' line in the feeder's log")
    uncertainties = [stamp["uncertainty_ns"] / 1e3 for stamp in stamps]
    print(f"{stream}: feeder frames {numbers[0]}..{numbers[-1]}, {missed} missed (sequence gaps);"
          f" capture_ns - queued: median {statistics.median(errors):.2f} ms, max {max(errors):.2f} ms;"
          f" uncertainty_ns median {statistics.median(uncertainties):.0f} us")
    return fails


def main():
    session, cameras = sys.argv[1], sys.argv[2:]
    fails = []
    for camera in cameras:
        stream, size, log = camera.split(":", 2)
        width, height = (int(v) for v in size.split("x"))
        fails += check(session, stream, width, height, log)
    for fail in fails:
        print("FAIL:", fail)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
