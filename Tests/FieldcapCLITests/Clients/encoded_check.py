#!/usr/bin/env python3
"""Checks a camera fieldcap recorded with encode=jpeg, encode=ffv1 or encode=fwht (a V4L2
memory-to-memory encoder: the kernel's vicodec), with the tools users decode video with.

Written from the SyncField format (timestamps files), fieldcap.json's documented fields
(format, encoding, drops) and the decoders' own interfaces, not from fieldcap's code:

- every timestamp line's frame_number is the frame's index in the video: 0..N-1, and the
  frame log names the same N frames, none of them among the dropped records;
- the sidecar's drops add up: count == the records listed, split by reason (ring, encoder);
  an extract (`fieldcap extract`, its fieldcap.json has `extract`) keeps no drops: skipped;
  a session `fieldcap recover` rebuilt (its fieldcap.json has `recovery`) has no written count
  or drops, since the killed recorder never wrote them: those two checks are skipped;
- ffprobe (FFmpeg's own MJPEG or FFV1 decoder) and GStreamer (matroskademux ! jpegdec, libjpeg;
  or avdec_ffv1, gst-libav) each decode every frame: N frames of the recorded size;
- with --reference ID, a raw camera of the same session that saw the same frames (two
  synthetic cameras of one size draw the same pattern for the same sequence number): each
  decoded frame's luma against the raw frame's, PSNR at or above --psnr-floor (dB) for both
  decoders. A raw Bayer reference's luma is that of OpenCV's demosaic of it (bilinear, its
  default), by JFIF's BT.601 weights. The lowest and mean PSNR are printed. With --static-reference the reference
  camera shows a still picture (vivid with its OSD text off): every frame is held against its
  first, after checking that the reference's frames are all the same.
- FFV1 is lossless: with --reference, each frame FFmpeg and GStreamer decode, converted back to
  the captured pixel format (packing planes, no resampling), must equal the raw frame byte for
  byte; any difference fails, whatever --psnr-floor says.
- FWHT (vicodec's codec) has no decoder in FFmpeg or GStreamer's Matroska demuxer: FFmpeg counts
  and demuxes the packets (V_MS/VFW/FOURCC, fourcc FWHT) into one stream, which v4l2-ctl feeds
  to vicodec's own stateful decoder (--decoder-device); every frame must come back, and with
  --reference its luma is held against the raw frame's as for JPEG. A track larger than the
  camera (an encoder's aligned picture, padded) is held by its top-left, the camera's size.

usage: encoded_check.py SESSION ID [--reference RAW_ID [--static-reference]] [--psnr-floor DB]
                        [--min-encoder-drops N] [--max-ring-drops N] [--decoder-device DEV]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def read_lines(path):
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def runs_to_set(runs):
    records = set()
    for first, last in runs:
        records.update(range(first, last + 1))
    return records


def luma_planes_ffmpeg(video, width, height):
    """Every frame's luma as FFmpeg decodes it (its native planar output, luma first)."""
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=pix_fmt", "-of", "json", video],
        check=True, capture_output=True, text=True)
    pix_fmt = json.loads(probe.stdout)["streams"][0]["pix_fmt"]
    frame_bytes = {"yuvj422p": width * height * 2, "yuv422p": width * height * 2, "yuvj420p": width * height * 3 // 2,
                   "yuv420p": width * height * 3 // 2, "gray": width * height}.get(pix_fmt)
    if frame_bytes is None:
        fail(f"{video}: FFmpeg decodes it as {pix_fmt}, not a planar YUV or grey format")
    # passthrough: one output frame per frame in the file (a variable-rate file would otherwise
    # have frames repeated to fill its gaps).
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", video, "-fps_mode", "passthrough", "-f", "rawvideo", "-c:v", "rawvideo", "-"],
                         check=True, capture_output=True).stdout
    if len(raw) % frame_bytes:
        fail(f"{video}: FFmpeg's output is not whole {pix_fmt} frames")
    frames = np.frombuffer(raw, dtype=np.uint8).reshape(-1, frame_bytes)
    return frames[:, : width * height].reshape(-1, height, width), pix_fmt


def frames_decoded_ffmpeg(video):
    """How many frames FFmpeg decodes (ffprobe -count_frames decodes each)."""
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
         "stream=nb_read_frames", "-of", "csv=p=0", video], check=True, capture_output=True, text=True)
    return int(probe.stdout.strip())


def luma_planes_gstreamer(video, width, height, grey, scale_to=None):
    """Every frame's luma as GStreamer's jpegdec decodes it (I420 or GRAY8, its planar outputs:
    luma first, as decoded; only the chroma of 4:2:2 is resampled). `scale_to` (w, h): each
    decoded frame scaled down, for counting large videos without holding them."""
    caps = "video/x-raw,format=GRAY8" if grey else "video/x-raw,format=I420"
    scale = []
    if scale_to:
        width, height = scale_to
        scale = ["videoscale", "!", f"{caps},width={width},height={height}", "!"]
    frame_bytes = width * height if grey else width * height * 3 // 2
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "frames.raw")
        result = subprocess.run(
            ["gst-launch-1.0", "-q", "filesrc", f"location={video}", "!", "matroskademux", "!", "jpegdec", "!", caps,
             "!"] + scale + ["filesink", f"location={out}"], capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            fail(f"{video}: GStreamer could not decode it: {result.stderr.strip() or result.stdout.strip()}")
        raw = open(out, "rb").read()
    if len(raw) % frame_bytes:
        fail(f"{video}: GStreamer's output is not whole frames")
    frames = np.frombuffer(raw, dtype=np.uint8).reshape(-1, frame_bytes)
    return frames[:, : width * height].reshape(-1, height, width)


def raw_luma(video, pixel_format, width, height):
    """A raw camera's frames as stored (FFmpeg demuxes the packets, nothing decoded), luma only."""
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", video, "-map", "0:v", "-fps_mode", "passthrough", "-c", "copy", "-f", "rawvideo", "-"],
                         check=True, capture_output=True).stdout
    if pixel_format == "YUYV":
        frames = np.frombuffer(raw, dtype=np.uint8).reshape(-1, height, width * 2)
        return frames[:, :, 0::2]
    if pixel_format == "NV12":
        frames = np.frombuffer(raw, dtype=np.uint8).reshape(-1, width * height * 3 // 2)
        return frames[:, : width * height].reshape(-1, height, width)
    if pixel_format == "GREY":
        return np.frombuffer(raw, dtype=np.uint8).reshape(-1, height, width)
    if pixel_format in BAYER_OPENCV:
        mosaics = np.frombuffer(raw, dtype=np.uint8).reshape(-1, height, width)
        return np.array([demosaiced_luma(mosaic, pixel_format) for mosaic in mosaics])
    fail(f"reference format {pixel_format} is not an 8-bit YUV, grey or Bayer format")


# V4L2's 8-bit Bayer fourccs and OpenCV's conversions of the same mosaics. OpenCV names a pattern
# by its second row's second and third pixels, so V4L2's BGGR (BA81) is its BayerRG: found by
# demosaicing a mosaic with red at the pattern's red sites only, which only the right code
# turns red.
BAYER_OPENCV = {"BA81": "COLOR_BayerRG2RGB", "GBRG": "COLOR_BayerGR2RGB", "GRBG": "COLOR_BayerGB2RGB",
                "RGGB": "COLOR_BayerBG2RGB"}


def demosaiced_luma(mosaic, pixel_format):
    """A Bayer mosaic's luma: OpenCV's bilinear demosaic, then JFIF's BT.601 luma, rounded."""
    # Imported here: only a Bayer reference needs OpenCV, and importing it costs seconds in the
    # kernel rig's emulated guest, where this checker runs nine times.
    import cv2

    rgb = cv2.cvtColor(mosaic, getattr(cv2, BAYER_OPENCV[pixel_format])).astype(np.float64)
    return np.clip(np.rint(0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2]), 0, 255).astype(np.uint8)


# A captured pixel format: FFmpeg's name, GStreamer's, and bytes per frame.
CAPTURED = {
    "YUYV": ("yuyv422", "YUY2", lambda w, h: w * h * 2),
    "NV12": ("nv12", "NV12", lambda w, h: w * h * 3 // 2),
    "GREY": ("gray", "GRAY8", lambda w, h: w * h),
    "Y16": ("gray16le", "GRAY16_LE", lambda w, h: w * h * 2),
    "Z16": ("gray16le", "GRAY16_LE", lambda w, h: w * h * 2),
    # FFV1 codes a Bayer mosaic as one grey plane: decoders give the mosaic back as grey.
    "BA81": ("gray", "GRAY8", lambda w, h: w * h),
    "GBRG": ("gray", "GRAY8", lambda w, h: w * h),
    "GRBG": ("gray", "GRAY8", lambda w, h: w * h),
    "RGGB": ("gray", "GRAY8", lambda w, h: w * h),
}


def ffv1_frames_ffmpeg(video, captured, width, height):
    """Every FFV1 frame as FFmpeg decodes it, converted to the captured layout (whole frames)."""
    ffmpeg_format, _, size = CAPTURED[captured]
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", video, "-fps_mode", "passthrough", "-pix_fmt", ffmpeg_format,
                          "-f", "rawvideo", "-"], check=True, capture_output=True).stdout
    frame_bytes = size(width, height)
    if len(raw) % frame_bytes:
        fail(f"{video}: FFmpeg's output is not whole {ffmpeg_format} frames")
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, frame_bytes)


def ffv1_frames_gstreamer(video, captured, width, height):
    """Every FFV1 frame as GStreamer's avdec_ffv1 decodes it, converted to the captured layout."""
    _, gst_format, size = CAPTURED[captured]
    frame_bytes = size(width, height)
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "frames.raw")
        result = subprocess.run(
            ["gst-launch-1.0", "-q", "filesrc", f"location={video}", "!", "matroskademux", "!", "avdec_ffv1", "!",
             "videoconvert", "!", f"video/x-raw,format={gst_format}", "!", "filesink", f"location={out}"],
            capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            fail(f"{video}: GStreamer could not decode it: {result.stderr.strip() or result.stdout.strip()}")
        raw = open(out, "rb").read()
    if len(raw) % frame_bytes:
        fail(f"{video}: GStreamer's output is not whole {gst_format} frames")
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, frame_bytes)


def raw_frames(video, captured, width, height):
    """A raw camera's frames as stored, whole (FFmpeg demuxes the packets, nothing decoded)."""
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", video, "-map", "0:v", "-fps_mode", "passthrough", "-c", "copy", "-f", "rawvideo", "-"],
                         check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, CAPTURED[captured][2](width, height))


def fwht_frames_vicodec(video, decoder, captured, width, height):
    """Every FWHT frame as vicodec's decoder gives it back, in the captured layout: FFmpeg demuxes
    the packets (it cannot decode FWHT), v4l2-ctl streams them through the decoder."""
    with tempfile.TemporaryDirectory() as scratch:
        stream, out = os.path.join(scratch, "frames.fwht"), os.path.join(scratch, "frames.raw")
        subprocess.run(["ffmpeg", "-v", "error", "-i", video, "-map", "0:v", "-c", "copy", "-f", "data", stream],
                       check=True)
        result = subprocess.run(
            ["v4l2-ctl", "-d", decoder, "--set-fmt-video-out=pixelformat=FWHT",
             f"--set-fmt-video=pixelformat={captured}", "--stream-mmap", "--stream-out-mmap",
             f"--stream-from={stream}", f"--stream-to={out}"], capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            fail(f"{video}: vicodec's decoder (v4l2-ctl -d {decoder}) failed: {result.stderr.strip()}")
        raw = open(out, "rb").read()
    frame_bytes = CAPTURED[captured][2](width, height)
    if len(raw) % frame_bytes:
        fail(f"{video}: the decoder's output is not whole {captured} frames")
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, frame_bytes)


def luma(frame, captured, width, height):
    """The luma plane of one frame in a captured 8-bit layout."""
    if captured == "YUYV":
        return frame.reshape(height, width * 2)[:, 0::2]
    if captured in ("NV12", "GREY"):
        return frame[: width * height].reshape(height, width)
    fail(f"{captured} is not an 8-bit YUV or grey format")


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("session")
    parser.add_argument("id")
    parser.add_argument("--reference")
    parser.add_argument("--static-reference", action="store_true")
    parser.add_argument("--psnr-floor", type=float, default=38.0)
    parser.add_argument("--min-encoder-drops", type=int, default=0)
    parser.add_argument("--max-ring-drops", type=int)
    parser.add_argument("--decoder-device")
    args = parser.parse_args()

    sidecar = json.load(open(os.path.join(args.session, "fieldcap.json")))
    streams = {stream["id"]: stream for stream in sidecar["streams"]}
    stream = streams.get(args.id) or fail(f"no stream {args.id} in fieldcap.json")
    fmt, encoding = stream["format"], stream.get("encoding") or fail(f"{args.id}: no encoding in fieldcap.json")
    width, height = fmt["width"], fmt["height"]
    codec = encoding["codec"]
    if (codec, fmt["pixel_format"]) not in (("jpeg", "MJPG"), ("ffv1", "FFV1"), ("fwht", "FWHT")):
        fail(f"{args.id}: stored as {fmt['pixel_format']} by {codec}, not MJPG by jpeg, FFV1 by ffv1 or FWHT by fwht")
    captured = encoding["captured_pixel_format"]
    grey = captured == "GREY"

    stamps = read_lines(os.path.join(args.session, f"{args.id}.timestamps.jsonl"))
    log = read_lines(os.path.join(args.session, f"{args.id}.frames.ndjson"))
    count = len(stamps)
    if [line["frame_number"] for line in stamps] != list(range(count)):
        fail(f"{args.id}: frame numbers are not 0..{count - 1}")
    if [line["frame_number"] for line in log] != list(range(count)):
        fail(f"{args.id}: the frame log has {len(log)} frames, the timestamps {count}")
    if [line["capture_ns"] for line in log] != [line["capture_ns"] for line in stamps]:
        fail(f"{args.id}: the frame log's capture times differ from the timestamps'")
    if "recovery" in sidecar:
        recovered(args, stream, os.path.join(args.session, f"{args.id}.mkv"), captured, width, height, count)
        return
    if stream["written"] != count:
        fail(f"{args.id}: fieldcap.json says {stream['written']} written, the timestamps hold {count}")

    # An extract (`fieldcap extract`) keeps frames, not the recording's drop accounting.
    drops = stream.get("drops") or ({"count": 0, "records": [], "reasons": {
        "ring": {"count": 0, "records": []}, "encoder": {"count": 0, "records": []}}} if "extract" in sidecar
        else fail(f"{args.id}: no drops in fieldcap.json"))
    dropped = runs_to_set(drops["records"])
    reasons = drops.get("reasons") or fail(f"{args.id}: an encoded camera's drops have no reasons")
    ring, encoder = runs_to_set(reasons["ring"]["records"]), runs_to_set(reasons["encoder"]["records"])
    if (drops["count"] != len(dropped) or reasons["ring"]["count"] != len(ring)
            or reasons["encoder"]["count"] != len(encoder) or dropped != ring | encoder or ring & encoder):
        fail(f"{args.id}: drops do not add up: {drops}")
    sequences = [line["sequence"] for line in log]
    if set(sequences) & dropped:
        fail(f"{args.id}: frames {sorted(set(sequences) & dropped)[:5]} are both written and dropped")
    if len(encoder) < args.min_encoder_drops:
        fail(f"{args.id}: {len(encoder)} frames dropped by the encoder, expected at least {args.min_encoder_drops}")
    if args.max_ring_drops is not None and len(ring) > args.max_ring_drops:
        fail(f"{args.id}: capture (the ring) dropped {len(ring)} frames, at most {args.max_ring_drops} allowed")

    video = os.path.join(args.session, f"{args.id}.mkv")
    if codec == "fwht":
        report = check_vicodec(args, streams, video, captured, width, height, sequences, count)
        print(f"PASS: {report}; drops: {reasons['ring']['count']} ring, {reasons['encoder']['count']} encoder")
        return
    decoded = frames_decoded_ffmpeg(video)
    if decoded != count:
        fail(f"{args.id}: FFmpeg decoded {decoded} frames, the timestamps hold {count}")
    report = f"{args.id}: {count} frames {width}x{height} decoded by FFmpeg and GStreamer"
    if codec == "ffv1":
        report += check_lossless(args, streams, video, captured, width, height, sequences, count)
    elif not args.reference:
        decoded = len(luma_planes_gstreamer(video, width, height, grey, scale_to=(16, 16)))
        if decoded != count:
            fail(f"{args.id}: GStreamer decoded {decoded} frames, the timestamps hold {count}")
    else:
        ffmpeg_luma, pix_fmt = luma_planes_ffmpeg(video, width, height)
        gst_luma = luma_planes_gstreamer(video, width, height, grey)
        if len(ffmpeg_luma) != count or len(gst_luma) != count:
            fail(f"{args.id}: FFmpeg gave {len(ffmpeg_luma)} frames, GStreamer {len(gst_luma)}, the timestamps hold {count}")
        reference = streams.get(args.reference) or fail(f"no stream {args.reference}")
        ref_log = read_lines(os.path.join(args.session, f"{args.reference}.frames.ndjson"))
        ref_luma = raw_luma(os.path.join(args.session, f"{args.reference}.mkv"),
                            reference["format"]["pixel_format"], width, height)
        report += f" ({pix_fmt})"
        scores = [min(psnr(ffmpeg_luma[frame_number], raw), psnr(gst_luma[frame_number], raw))
                  for frame_number, raw in paired_with_reference(args, sequences, ref_log, ref_luma, count)]
        lowest, mean = min(scores), sum(scores) / len(scores)
        if lowest < args.psnr_floor:
            fail(f"{args.id}: luma PSNR {lowest:.1f} dB against {args.reference}, below the floor {args.psnr_floor} dB")
        report += f"; luma PSNR against {args.reference} over {len(scores)} frames: lowest {lowest:.1f} dB, mean {mean:.1f} dB"
    report += f"; drops: {reasons['ring']['count']} ring, {reasons['encoder']['count']} encoder"
    print("PASS: " + report)


def recovered(args, stream, video, captured, width, height, count):
    """A recovered session: every frame the timestamps name decodes (no written count, no drops)."""
    if stream["format"]["pixel_format"] == "FWHT":
        report = check_vicodec(args, {}, video, captured, width, height, None, count)
    else:
        decoded = frames_decoded_ffmpeg(video)
        if decoded != count:
            fail(f"{args.id}: FFmpeg decoded {decoded} frames, the timestamps hold {count}")
        report = f"{args.id}: {count} frames decoded by FFmpeg"
    print(f"PASS: {report} (recovered)")


def paired_with_reference(args, sequences, ref_log, ref_frames, count):
    """(frame number, the reference's frame it must match) for each encoded frame the reference
    saw: the one with its sequence number, or with --static-reference the reference's first
    (after checking the reference is still). Fails when fewer than half the frames have one."""
    if args.static_reference:
        moving = [n for n in range(len(ref_frames)) if not np.array_equal(ref_frames[n], ref_frames[0])]
        if moving or len(ref_frames) == 0:
            fail(f"{args.reference} is not a still picture: frames {moving[:5]} differ from its first")
    by_sequence = {line["sequence"]: line["frame_number"] for line in ref_log}
    pairs = [(frame_number, ref_frames[0] if args.static_reference else ref_frames[by_sequence[sequence]])
             for frame_number, sequence in enumerate(sequences) if args.static_reference or sequence in by_sequence]
    if len(pairs) < count // 2:
        fail(f"{args.id}: only {len(pairs)} of {count} frames have a raw frame in {args.reference}")
    return pairs


def check_vicodec(args, streams, video, captured, width, height, sequences, count):
    """FWHT: FFmpeg finds every packet, vicodec's decoder gives every frame back; with a
    reference, each frame's luma PSNR against its raw frame is at or above the floor."""
    # One ffprobe for the packets and the picture's size: each FFmpeg start costs a second or more
    # in the emulated guest.
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
         "stream=nb_read_packets,codec_tag_string,width,height", "-of", "json", video],
        check=True, capture_output=True, text=True)
    info = json.loads(probe.stdout)["streams"][0]
    if info["codec_tag_string"] != "FWHT" or int(info["nb_read_packets"]) != count:
        fail(f"{args.id}: FFmpeg finds {info}, expected {count} FWHT packets")
    decoder = args.decoder_device or fail("FWHT needs --decoder-device (vicodec's stateful decoder)")
    # The picture as coded: an encoder that aligns it larger than the camera's (vicodec's
    # 640x360 at the least) codes the camera's frame top-left in it, padded.
    coded_width, coded_height = info["width"], info["height"]
    if coded_width < width or coded_height < height:
        fail(f"{args.id}: the track is {coded_width}x{coded_height}, smaller than the camera's {width}x{height}")
    frames = fwht_frames_vicodec(video, decoder, captured, coded_width, coded_height)
    if len(frames) != count:
        fail(f"{args.id}: vicodec's decoder gave {len(frames)} frames, the timestamps hold {count}")
    report = f"{args.id}: {count} FWHT packets found by FFmpeg, {count} frames {coded_width}x{coded_height} {captured} decoded by vicodec"
    if (coded_width, coded_height) != (width, height):
        report += f" (the camera's {width}x{height} top-left)"
    if not args.reference:
        return report
    reference = streams.get(args.reference) or fail(f"no stream {args.reference}")
    ref_log = read_lines(os.path.join(args.session, f"{args.reference}.frames.ndjson"))
    ref_frames = raw_frames(os.path.join(args.session, f"{args.reference}.mkv"),
                            reference["format"]["pixel_format"], width, height)
    scores = [psnr(luma(frames[frame_number], captured, coded_width, coded_height)[:height, :width],
                   luma(raw, reference["format"]["pixel_format"], width, height))
              for frame_number, raw in paired_with_reference(args, sequences, ref_log, ref_frames, count)]
    lowest, mean = min(scores), sum(scores) / len(scores)
    if lowest < args.psnr_floor:
        fail(f"{args.id}: luma PSNR {lowest:.1f} dB against {args.reference}, below the floor {args.psnr_floor} dB")
    return report + f"; luma PSNR against {args.reference} over {len(scores)} frames: lowest {lowest:.1f} dB, mean {mean:.1f} dB"


def check_lossless(args, streams, video, captured, width, height, sequences, count):
    """FFV1: both decoders give every frame; with a reference, each equals its raw frame exactly."""
    ffmpeg_frames = ffv1_frames_ffmpeg(video, captured, width, height)
    gst_frames = ffv1_frames_gstreamer(video, captured, width, height)
    if len(ffmpeg_frames) != count or len(gst_frames) != count:
        fail(f"{args.id}: FFmpeg gave {len(ffmpeg_frames)} frames, GStreamer {len(gst_frames)}, the timestamps hold {count}")
    if not args.reference:
        return f" ({captured} from FFV1)"
    reference = streams.get(args.reference) or fail(f"no stream {args.reference}")
    ref_format = reference["format"]
    # Y16 and Z16 are the same samples; a Bayer pattern is only itself.
    if (ref_format["width"], ref_format["height"]) != (width, height) or \
            CAPTURED.get(ref_format["pixel_format"], [None])[0] != CAPTURED[captured][0] or \
            (captured in BAYER_OPENCV and ref_format["pixel_format"] != captured):
        fail(f"{args.reference} is {ref_format}, not raw {captured} {width}x{height}")
    ref_log = read_lines(os.path.join(args.session, f"{args.reference}.frames.ndjson"))
    ref_frames = raw_frames(os.path.join(args.session, f"{args.reference}.mkv"), captured, width, height)
    compared = 0
    for frame_number, raw in paired_with_reference(args, sequences, ref_log, ref_frames, count):
        for decoder, frames in (("FFmpeg", ffmpeg_frames), ("GStreamer", gst_frames)):
            if not np.array_equal(frames[frame_number], raw):
                differing = int(np.count_nonzero(frames[frame_number] != raw))
                fail(f"{args.id} frame {frame_number} as {decoder} decodes it differs from {args.reference}'s raw frame in {differing} bytes: not lossless")
        compared += 1
    return f" ({captured} from FFV1); bit-exact against {args.reference} over {compared} frames"


if __name__ == "__main__":
    main()
