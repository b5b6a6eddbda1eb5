#!/usr/bin/env python3
"""Checks a Matroska file fieldcap wrote from an H.264 or HEVC encoder's Annex B stream, against
that stream, with FFmpeg and GStreamer (written from ISO/IEC 14496-15 and the Matroska codec
mappings, not from fieldcap's code):

- FFmpeg decodes every frame the frame log names, with no decoder complaint;
- each decoded frame is the frame FFmpeg decodes from the encoder's own stream at that index,
  exactly (framemd5): the file holds the encoder's bitstream, repackaged, not changed;
- the packets flagged as keyframes are exactly the frames that are IDR (H.264) or IRAP (HEVC)
  pictures in the encoder's stream, as FFmpeg reads them there;
- GStreamer (matroskademux ! avdec_h264 / avdec_h265) decodes every frame too.

usage: avc_check.py VIDEO.mkv REFERENCE.h264|.hevc FRAMES
"""
import json
import os
import subprocess
import sys
import tempfile


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def framemd5(path, extra=()):
    result = subprocess.run(["ffmpeg", "-v", "error", *extra, "-i", path, "-map", "0:v", "-fps_mode", "passthrough",
                             "-f", "framemd5", "-"], capture_output=True, text=True)
    if result.returncode != 0 or result.stderr.strip():
        fail(f"{path}: FFmpeg: {result.stderr.strip()[:300]}")
    return [line.split(",")[-1].strip() for line in result.stdout.splitlines() if line and not line.startswith("#")]


def keyframes(path):
    result = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags",
                             "-of", "json", path], check=True, capture_output=True, text=True)
    return [index for index, packet in enumerate(json.loads(result.stdout)["packets"]) if "K" in packet["flags"]]


def main():
    video, reference, frames = sys.argv[1], sys.argv[2], int(sys.argv[3])
    codec = "hevc" if reference.endswith(".hevc") else "h264"
    decoded = framemd5(video)
    if len(decoded) != frames:
        fail(f"{video}: FFmpeg decoded {len(decoded)} frames, the frame log names {frames}")
    expected = framemd5(reference, ["-f", codec])[:frames]
    differing = [index for index, (a, b) in enumerate(zip(decoded, expected)) if a != b]
    if differing:
        fail(f"{video}: frames {differing[:5]} decode differently from the encoder's own stream")
    file_keys = keyframes(video)
    stream_keys = [index for index in keyframes(reference) if index < frames]
    if file_keys != stream_keys:
        fail(f"{video}: keyframes at {file_keys[:8]}, the encoder's stream has them at {stream_keys[:8]}")
    size = json.loads(subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "json",
         video], check=True, capture_output=True, text=True).stdout)["streams"][0]
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "frames.i420")
        result = subprocess.run(
            ["gst-launch-1.0", "-q", "filesrc", f"location={video}", "!", "matroskademux", "!",
             "avdec_h264" if codec == "h264" else "avdec_h265", "!", "videoconvert", "!", "video/x-raw,format=I420",
             "!", "filesink", f"location={out}"], capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            fail(f"{video}: GStreamer could not decode it: {result.stderr.strip() or result.stdout.strip()[-300:]}")
        gst_frames = os.path.getsize(out) / (size["width"] * size["height"] * 3 // 2)
    if gst_frames != frames:
        fail(f"{video}: GStreamer decoded {gst_frames} frames, the frame log names {frames}")
    print(f"PASS: {video}: {frames} {codec} frames decoded by FFmpeg, each as the encoder's stream decodes it; "
          f"keyframes at the encoder's {len(file_keys)} I-frames; GStreamer decoded all {gst_frames:.0f}")


if __name__ == "__main__":
    main()
