"""A fieldcap session read as the SyncField format and fieldcap's sidecar describe it, for the
export checkers (export_check.py, folder_check.py): JSON lines, the sync point, the Matroska
videos' frames as ffmpeg demuxes them. Never through fieldcap's code."""
import json
import subprocess
import sys
from pathlib import Path


def fail(message):
    """The first difference, on stderr as `CHECKER: message`, and exit status 1."""
    print(f"{Path(sys.argv[0]).stem}: {message}", file=sys.stderr)
    sys.exit(1)


def lines(path):
    with open(path, "rb") as f:
        return [json.loads(line) for line in f.read().split(b"\n") if line]


def mkv_frames(path, frame_bytes, decode_to=None):
    """The video's frames as ffmpeg demuxes them (stream copy: the stored bytes), or with
    `decode_to` (an ffmpeg pixel format) decoded by ffmpeg into that format (a lossless FFV1 video
    back to its camera's layout)."""
    output = ["-c", "copy"] if decode_to is None else ["-fps_mode", "passthrough", "-pix_fmt", decode_to]
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(path), "-map", "0:v:0"] + output + ["-f", "rawvideo", "-"],
        check=True,
        capture_output=True,
    ).stdout
    if len(raw) % frame_bytes:
        fail(f"{path}: ffmpeg gave {len(raw)} bytes, not whole {frame_bytes}-byte frames")
    return [raw[i : i + frame_bytes] for i in range(0, len(raw), frame_bytes)]


def mkv_packets(path):
    """A compressed video's frames as ffmpeg demuxes them: each packet's bytes (ffprobe's sizes)."""
    sizes = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=size", "-of", "csv=p=0", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(path), "-map", "0:v:0", "-c", "copy", "-f", "rawvideo", "-"],
        check=True,
        capture_output=True,
    ).stdout
    packets, at = [], 0
    for size in map(int, sizes):
        packets.append(raw[at : at + size])
        at += size
    if at != len(raw):
        fail(f"{path}: ffmpeg gave {len(raw)} bytes, its packets add up to {at}")
    return packets


class SessionFiles:
    """The session's directory, sync point and sidecar, and capture_ns in UTC through the sync point."""

    def __init__(self, directory):
        self.dir = Path(directory)
        sync = json.loads((self.dir / "sync_point.json").read_text())
        self.mono, self.wall = sync["monotonic_ns"], sync["wall_clock_ns"]
        self.sidecar = json.loads((self.dir / "fieldcap.json").read_text())

    def utc(self, capture_ns):
        return capture_ns - self.mono + self.wall
