#!/usr/bin/env python3
"""Judges a fieldcap EuRoC or image-folder export with OpenCV, against the session it came from.

    folder_check.py euroc SESSION DIR [--colour] [--depth ID ...]
    folder_check.py images SESSION DIR [--depth ID] [--every N] [--fps F]
    folder_check.py mp4 SESSION DIR

Both take --streams IDS when the export did.

The session is read as the SyncField format and fieldcap's sidecar describe it (JSON lines, the
sync point, the Matroska videos' frames as ffmpeg demuxes them), never through fieldcap's code.
Every PNG and JPEG is read with OpenCV (cv2.imread): size, channels and bit depth, and its
pixels against the frame it came from (8-bit grey PNGs equal the frame's luma, 16-bit PNGs its
samples, RGB its luma within rounding, JPEGs above a PSNR floor; an MJPEG camera's frames are
decoded by OpenCV, and its JPEGs must be the camera's own bytes). The CSV, YAML and JSON files
are compared with the session's times and IMU samples. For `images`, the iOS 3D Logger's Python
loading snippet (../shared/seeds) runs on the folder as written. An `mp4` folder's videos are read
by ffprobe (H.264 High, yuv420p, the camera's size, each packet's time the frame's capture_ns
since the first) and decoded by ffmpeg to raw 4:2:0 planes, held to the frames' own luma and
chroma above a PSNR floor. Prints "folder ok"; exits 1 with the first difference.
"""
import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import yaml

from session_files import SessionFiles, fail, lines, mkv_frames, mkv_packets

G = 9.80665


class Session(SessionFiles):
    def __init__(self, directory, streams=None):
        super().__init__(directory)
        self.streams = [s for s in self.sidecar["streams"] if streams is None or s["id"] in streams]

    def cameras(self):
        return [s for s in self.streams if "format" in s]

    def frames(self, stream):
        """(capture_ns, frame bytes) of a camera, in order."""
        fmt = stream["format"]
        w, h, pix = fmt["width"], fmt["height"], fmt["pixel_format"]
        stamps = [line["capture_ns"] for line in lines(self.dir / f"{stream['id']}.timestamps.jsonl")]
        if pix == "MJPG":
            frames = mkv_packets(self.dir / f"{stream['id']}.mkv")
        else:
            size = {"YUYV": w * h * 2, "GREY": w * h, "Y16": w * h * 2, "Z16": w * h * 2, "NV12": w * h * 3 // 2}.get(pix)
            size = size or (w * h if pix in BAYER_OPENCV else fail(f"{stream['id']}: no size for {pix}"))
            frames = mkv_frames(self.dir / f"{stream['id']}.mkv", size)
        if len(frames) != len(stamps):
            fail(f"{stream['id']}: {len(frames)} frames, {len(stamps)} timestamps")
        return list(zip(stamps, frames))

    def imus(self):
        """(stream, [(capture_ns, gyro xyz, accel xyz)]) of each stream with accel or gyro channels."""
        out = []
        for stream in self.streams:
            if "format" in stream:
                continue
            samples = lines(self.dir / f"{stream['id']}.jsonl")
            names = stream.get("channels") or sorted(samples[0]["channels"])
            gyro = [next((f"{p}_{a}" for p in ("anglvel", "gyro") if f"{p}_{a}" in names), None) for a in "xyz"]
            accel = [f"accel_{a}" if f"accel_{a}" in names else None for a in "xyz"]
            if not any(gyro) and not any(accel):
                continue
            get = lambda s, n: s["channels"].get(n) if n else None
            out.append(
                (stream, [(s["capture_ns"], [get(s, n) for n in gyro], [get(s, n) for n in accel]) for s in samples])
            )
        return out


def is_depth_camera(stream, depth):
    """Z16 is depth by definition (V4L2_PIX_FMT_Z16); a Y16 camera is when --depth names it."""
    pix = stream["format"]["pixel_format"]
    return pix == "Z16" or (pix == "Y16" and stream["id"] in depth)


# V4L2's 8-bit Bayer fourccs and OpenCV's conversions of the same mosaics (OpenCV names a pattern by
# its second row's second and third pixels: V4L2's BGGR, BA81, is its BayerRG).
BAYER_OPENCV = {"BA81": cv2.COLOR_BayerRG2RGB, "GBRG": cv2.COLOR_BayerGR2RGB, "GRBG": cv2.COLOR_BayerGB2RGB,
                "RGGB": cv2.COLOR_BayerBG2RGB}


def demosaiced(frame, fmt):
    """A Bayer frame's colours as OpenCV's bilinear demosaic (its default) gives them. Demosaics
    differ only in their rules for the outermost pixels, so callers compare the interior."""
    w, h = fmt["width"], fmt["height"]
    return cv2.cvtColor(np.frombuffer(frame, np.uint8).reshape(h, w), BAYER_OPENCV[fmt["pixel_format"]]).astype(int)


def luma(frame, fmt):
    w, h, pix = fmt["width"], fmt["height"], fmt["pixel_format"]
    b = np.frombuffer(frame, np.uint8)
    if pix in BAYER_OPENCV:
        # JFIF's BT.601 luma of the demosaiced colours.
        rgb = demosaiced(frame, fmt)
        return np.clip(np.rint(0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2]), 0, 255).astype(np.uint8)
    if pix == "YUYV":
        return b[0::2].reshape(h, w)
    if pix == "NV12" or pix == "GREY":
        return b[: w * h].reshape(h, w)
    if pix == "Y16":
        return b[1::2].reshape(h, w)  # the high byte of each little-endian sample
    if pix == "MJPG":
        return decoded(frame, cv2.IMREAD_GRAYSCALE, (h, w))  # OpenCV's libjpeg gives the JPEG's Y as it is
    fail(f"no luma for {pix}")


def decoded(jpeg, mode, shape):
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), mode)
    if image is None or image.shape != shape:
        fail(f"OpenCV decodes an MJPEG frame as {None if image is None else image.shape}, expected {shape}")
    return image


def rgb(frame, fmt):
    """The frame's colours by the JFIF (BT.601 full-range) equations, each chroma sample given to
    the pixels it covers: the reference the RGB PNGs are held to."""
    w, h, pix = fmt["width"], fmt["height"], fmt["pixel_format"]
    b = np.frombuffer(frame, np.uint8)
    if pix == "YUYV":
        y = b[0::2].reshape(h, w).astype(float)
        u = np.repeat(b[1::4].reshape(h, w // 2), 2, axis=1).astype(float)
        v = np.repeat(b[3::4].reshape(h, w // 2), 2, axis=1).astype(float)
    elif pix == "NV12":
        y = b[: w * h].reshape(h, w).astype(float)
        uv = b[w * h :].reshape(h // 2, w // 2, 2)
        u = np.repeat(np.repeat(uv[:, :, 0], 2, axis=0), 2, axis=1).astype(float)
        v = np.repeat(np.repeat(uv[:, :, 1], 2, axis=0), 2, axis=1).astype(float)
    elif pix in BAYER_OPENCV:
        return demosaiced(frame, fmt)
    elif pix == "MJPG":
        # OpenCV's own decoding (libjpeg's, with its interpolated chroma: within the tolerance).
        return decoded(frame, cv2.IMREAD_COLOR, (h, w, 3))[:, :, ::-1].astype(int)
    else:
        y = luma(frame, fmt).astype(float)
        u = v = np.full_like(y, 128.0)
    r = y + 1.402 * (v - 128)
    g = y - 0.344136 * (u - 128) - 0.714136 * (v - 128)
    bl = y + 1.772 * (u - 128)
    return np.clip(np.rint(np.stack([r, g, bl], axis=2)), 0, 255).astype(int)


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def read_image(path, shape, dtype):
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        fail(f"OpenCV cannot read {path}")
    if image.shape != shape or image.dtype != dtype:
        fail(f"{path}: OpenCV reads {image.shape} {image.dtype}, expected {shape} {dtype}")
    return image


def check_euroc(session, out, colour, depth):
    mav = Path(out) / "mav0"
    imus = session.imus()
    span = None
    for number, (stream, samples) in enumerate(imus):
        folder = mav / f"imu{number}"
        rows = (folder / "data.csv").read_text().splitlines()
        if rows[0] != (
            "#timestamp [ns],w_RS_S_x [rad s^-1],w_RS_S_y [rad s^-1],w_RS_S_z [rad s^-1],"
            "a_RS_S_x [m s^-2],a_RS_S_y [m s^-2],a_RS_S_z [m s^-2]"
        ):
            fail(f"{folder}/data.csv: header {rows[0]!r}")
        if len(rows) - 1 != len(samples):
            fail(f"{folder}/data.csv: {len(rows) - 1} rows, the session has {len(samples)} samples")
        for row, (t, gyro, accel) in zip(rows[1:], samples):
            cells = row.split(",")
            if int(cells[0]) != session.utc(t):
                fail(f"{folder}/data.csv: time {cells[0]}, expected {session.utc(t)}")
            values = [float(c) if c else None for c in cells[1:]]
            for got, want in zip(values, gyro + accel):
                if not close(got, want):
                    fail(f"{folder}/data.csv: {row}: {got} is not the session's {want}")
        if (mav / f"imu{number}.csv").read_bytes() != (folder / "data.csv").read_bytes():
            fail(f"mav0/imu{number}.csv (Kalibr's) differs from mav0/imu{number}/data.csv")
        info = yaml.safe_load((folder / "sensor.yaml").read_text())
        if info["sensor_type"] != "imu" or info["rate_hz"] != stream["nominal_rate"]:
            fail(f"{folder}/sensor.yaml: {info}")
        if span is None:
            span = (session.utc(samples[0][0]), session.utc(samples[-1][0]))
        print(f"euroc imu{number} ({stream['id']}): {len(samples)} samples equal the session's")

    numbers = {"cam": 0, "depth": 0}
    for stream in session.cameras():
        fmt = stream["format"]
        w, h, pix = fmt["width"], fmt["height"], fmt["pixel_format"]
        is_depth = is_depth_camera(stream, depth)
        kind = "depth" if is_depth else "cam"
        name = f"{kind}{numbers[kind]}"
        numbers[kind] += 1
        folder = mav / name
        rows = (folder / "data.csv").read_text().splitlines()
        if rows[0] != "#timestamp [ns],filename":
            fail(f"{folder}/data.csv: header {rows[0]!r}")
        frames = [(session.utc(t), frame) for t, frame in session.frames(stream)]
        kept = [(t, frame) for t, frame in frames if span is None or span[0] <= t <= span[1]]
        if len(rows) - 1 != len(kept) or not kept:
            fail(f"{folder}/data.csv: {len(rows) - 1} rows, {len(kept)} frames in the IMU's span")
        listed = set()
        for row, (t, frame) in zip(rows[1:], kept):
            stamp, filename = row.split(",")
            if int(stamp) != t or filename != f"{t}.png":
                fail(f"{folder}/data.csv: {row}, expected {t},{t}.png")
            listed.add(filename)
            path = folder / "data" / filename
            if is_depth:
                image = read_image(path, (h, w), np.uint16)
                if not np.array_equal(image, np.frombuffer(frame, "<u2").reshape(h, w)):
                    fail(f"{path}: not the frame's 16-bit samples")
            elif colour and pix in BAYER_OPENCV:
                image = read_image(path, (h, w, 3), np.uint8)
                worst = np.abs(image[:, :, ::-1].astype(int) - rgb(frame, fmt))[1:-1, 1:-1].max()
                if worst > 1:
                    fail(f"{path}: inside its border, an RGB value is {worst} from OpenCV's demosaic of the mosaic")
            elif colour:
                image = read_image(path, (h, w, 3), np.uint8)  # OpenCV gives BGR
                worst = np.abs(image[:, :, ::-1].astype(int) - rgb(frame, fmt)).max()
                if worst > 2:
                    fail(f"{path}: an RGB value is {worst} from the frame's YUV in JPEG's BT.601")
            elif pix in BAYER_OPENCV:
                image = read_image(path, (h, w), np.uint8)
                worst = np.abs(image.astype(int) - luma(frame, fmt).astype(int))[1:-1, 1:-1].max()
                if worst > 1:
                    fail(f"{path}: inside its border, a grey value is {worst} from the luma of OpenCV's demosaic")
            else:
                image = read_image(path, (h, w), np.uint8)
                if not np.array_equal(image, luma(frame, fmt)):
                    fail(f"{path}: not the frame's luma")
        files = {p.name for p in (folder / "data").iterdir()}
        if files != listed:
            fail(f"{folder}/data: {len(files)} files, data.csv lists {len(listed)}")
        info = yaml.safe_load((folder / "sensor.yaml").read_text())
        if info["sensor_type"] != "camera" or info["resolution"] != [w, h] or info["rate_hz"] != stream["nominal_rate"]:
            fail(f"{folder}/sensor.yaml: {info}")
        if len(info["T_BS"]["data"]) != 16:
            fail(f"{folder}/sensor.yaml: T_BS {info['T_BS']}")
        calibration = stream.get("calibration")
        if calibration:
            if info["intrinsics"] != calibration["intrinsics"]:
                fail(f"{folder}/sensor.yaml: intrinsics {info['intrinsics']}, calibrated {calibration['intrinsics']}")
            if info["distortion_coefficients"] != calibration["distortion_coeffs"]:
                fail(f"{folder}/sensor.yaml: distortion {info['distortion_coefficients']}")
            if "T_cam_imu" in calibration:
                # EuRoC's T_BS is the camera in the body (IMU) frame: Kalibr's T_cam_imu inverted.
                want = np.linalg.inv(np.array(calibration["T_cam_imu"], dtype=float))
                if not np.allclose(np.array(info["T_BS"]["data"], dtype=float).reshape(4, 4), want, atol=1e-9):
                    fail(f"{folder}/sensor.yaml: T_BS {info['T_BS']['data']} is not T_cam_imu inverted")
        elif "intrinsics" in info:
            fail(f"{folder}/sensor.yaml: intrinsics without a calibration")
        if name == "cam0":
            times = (Path(out) / "times.txt").read_text().split()
            if [int(t) for t in times] != [t for t, _ in kept]:
                fail("times.txt is not cam0's times")
        agree = "within 1 of OpenCV's demosaic inside the border" if pix in BAYER_OPENCV else "pixels equal"
        print(f"euroc {name} ({stream['id']}): {len(kept)} PNGs of {len(frames)} frames read by OpenCV, {agree}")


def nearest(samples, t):
    best = min(samples, key=lambda s: (abs(s[0] - t), s[0] > t))
    return best


LOGGER_SNIPPET = """
import numpy as np
import json
from pathlib import Path

session = Path({path!r})

# Load all frames
frames = [json.loads(l) for l in (session / "frames.jsonl").read_text().splitlines()]

# Camera pose for frame 0
T = np.array(frames[0]["camera_transform"]).reshape(4, 4, order='F')
position = T[:3, 3]
rotation = T[:3, :3]

# Intrinsics
K = np.array(frames[0]["camera_intrinsics"]).reshape(3, 3, order='F')
fx, fy, cx, cy = K[0,0], K[1,1], K[0,2], K[1,2]
"""

LOGGER_DEPTH = """
# Depth map (LiDAR only)
w, h = frames[0]["depth_resolution"]
depth = np.fromfile(session / "depth/000000.bin", dtype=np.float32).reshape(h, w)
conf  = np.fromfile(session / "confidence/000000.bin", dtype=np.uint8).reshape(h, w)
"""


def psnr(a, b):
    mse = np.mean((a.astype(float) - b.astype(float)) ** 2)
    return 99.0 if mse == 0 else 10 * math.log10(255**2 / mse)


def check_images(session, out, depth, every, fps):
    out = Path(out)
    cameras = [s for s in session.cameras() if not is_depth_camera(s, depth)]
    depths = [s for s in session.cameras() if is_depth_camera(s, depth)]
    camera = cameras[0]
    fmt = camera["format"]
    w, h = fmt["width"], fmt["height"]
    frames = session.frames(camera)
    records = lines(out / "frames.jsonl")
    meta = json.loads((out / "metadata.json").read_text())
    # Which frames: every n-th, then at most fps a second.
    chosen, due = [], None
    for index, (t, frame) in enumerate(frames):
        if index % every:
            continue
        if fps:
            period = int(1e9 / fps)
            if due is not None and t < due:
                continue
            due = t + period // 2 if due is None else max(due + period, t + period // 2)
        chosen.append((index, t, frame))
    if len(records) != len(chosen) or meta["frameCount"] != len(chosen):
        fail(f"{len(records)} lines in frames.jsonl, metadata {meta['frameCount']}, expected {len(chosen)}")
    imus = session.imus()
    samples = imus[0][1] if imus else None
    depth_frames = session.frames(depths[0]) if depths else None
    worst = 99.0
    holes = 0  # depth images with samples of no depth, whose confidence is 0
    for number, (record, (index, t, frame)) in enumerate(zip(records, chosen)):
        if record["frame_index"] != number or record["source_frame_number"] != index:
            fail(f"frames.jsonl line {number + 1}: frame_index {record['frame_index']}, source {record['source_frame_number']}")
        if record["capture_ns"] != t or abs(record["timestamp"] - t / 1e9) > 1e-6:
            fail(f"frames.jsonl line {number + 1}: timestamp {record['timestamp']}, expected {t / 1e9}")
        if record["wall_clock_ns"] != session.utc(t) or record["camera_resolution"] != [w, h]:
            fail(f"frames.jsonl line {number + 1}: {record}")
        calibration = camera.get("calibration")
        if calibration:
            fx, fy, cx, cy = calibration["intrinsics"]
            if record["camera_intrinsics"] != [fx, 0, 0, 0, fy, 0, cx, cy, 1]:
                fail(f"frames.jsonl line {number + 1}: camera_intrinsics {record['camera_intrinsics']}")
        elif record["camera_intrinsics"] is not None:
            fail("camera_intrinsics without a calibration")
        if samples:
            st, gyro, accel = nearest(samples, t)
            if abs(record["imu_timestamp"] - st / 1e9) > 1e-6:
                fail(f"frames.jsonl line {number + 1}: imu_timestamp {record['imu_timestamp']}, nearest is {st / 1e9}")
            if any(g is not None for g in gyro) and not all(close(a, b) for a, b in zip(record["rotation_rate"], gyro)):
                fail(f"frames.jsonl line {number + 1}: rotation_rate {record['rotation_rate']}, sample {gyro}")
            in_g = [None if a is None else a / G for a in accel]
            if any(a is not None for a in accel) and not all(close(a, b) for a, b in zip(record["user_acceleration"], in_g)):
                fail(f"frames.jsonl line {number + 1}: user_acceleration {record['user_acceleration']}, sample {accel}")
        # Grey cameras give greyscale JPEGs, colour ones colour (OpenCV reads them as BGR).
        if fmt["pixel_format"] in ("GREY", "Y16"):
            image = read_image(out / "rgb" / f"{number:06d}.jpg", (h, w), np.uint8)
        else:
            image = cv2.cvtColor(read_image(out / "rgb" / f"{number:06d}.jpg", (h, w, 3), np.uint8), cv2.COLOR_BGR2GRAY)
        quality = psnr(image, luma(frame, fmt))
        if fmt["pixel_format"] == "MJPG" and (out / "rgb" / f"{number:06d}.jpg").read_bytes() != frame:
            fail(f"rgb/{number:06d}.jpg: not the MJPEG camera's own JPEG (it needs no second encoding)")
        worst = min(worst, quality)
        if depth_frames:
            dt, dframe = nearest([(s, f) for s, f in depth_frames], t)
            dfmt = depths[0]["format"]
            dw, dh = dfmt["width"], dfmt["height"]
            want = np.frombuffer(dframe, "<u2").reshape(dh, dw)
            png = read_image(out / "depth" / f"{number:06d}.png", (dh, dw), np.uint16)
            if not np.array_equal(png, want):
                fail(f"depth/{number:06d}.png: not the nearest depth frame's samples")
            metres = np.fromfile(out / "depth" / f"{number:06d}.bin", dtype=np.float32).reshape(dh, dw)
            if not np.allclose(metres, want.astype(np.float32) / 1000):
                fail(f"depth/{number:06d}.bin: not the depth in metres")
            # The Logger's ARKit confidence levels: high (2) where the camera measured, low (0)
            # where it has no depth (a sample of 0).
            confidence = np.fromfile(out / "confidence" / f"{number:06d}.bin", dtype=np.uint8).reshape(dh, dw)
            if not np.array_equal(confidence, np.where(want > 0, 2, 0).astype(np.uint8)):
                fail(f"confidence/{number:06d}.bin: not 2 where there is depth and 0 where there is none")
            holes += int((want == 0).sum() > 0)
    # The floor: a JPEG at quality 90 of the synthetic camera's noisy pattern gives ~31 dB of luma
    # (after the RGB round trip OpenCV's reading adds), vivid's smooth bars far more; a frame of
    # the wrong camera, time or format gives under 15.
    if worst < 28:
        fail(f"a JPEG's luma PSNR is {worst:.1f} dB, below 28")
    if len(list((out / "rgb").iterdir())) != len(chosen):
        fail("rgb/ has other files than frames.jsonl lists")
    if meta["rgbResolution"] != [w, h] or meta["hasDepth"] != bool(depths):
        fail(f"metadata.json: {meta}")
    if abs(meta["startTimestamp"] - chosen[0][1] / 1e9) > 1e-6 or abs(meta["endTimestamp"] - chosen[-1][1] / 1e9) > 1e-6:
        fail(f"metadata.json: start/end {meta['startTimestamp']}/{meta['endTimestamp']}")
    for key in ("sessionID", "deviceModel", "osVersion", "depthResolution"):
        if key not in meta:
            fail(f"metadata.json has no {key}")
    if camera.get("calibration"):
        snippet = LOGGER_SNIPPET.format(path=str(out)) + (LOGGER_DEPTH if depths else "")
        subprocess.run([sys.executable, "-c", snippet], check=True)
        print("the 3D Logger's loading snippet ran" + (" (depth included)" if depths else ""))
    print(f"images {camera['id']}: {len(chosen)} JPEGs of {len(frames)} frames read by OpenCV, luma PSNR >= {worst:.1f} dB")
    if depths:
        print(f"images depth ({depths[0]['id']}, {depths[0]['format']['pixel_format']}): {len(chosen)} depth PNGs, "
              f"metres and confidence equal the nearest frame's, {holes} with holes of no depth")


def planes420(frame, fmt):
    """The frame's Y, U and V as 4:2:0 planes from its own samples (4:2:2's row pairs averaged;
    no chroma for grey formats), or None for the chroma the format does not have."""
    w, h, pix = fmt["width"], fmt["height"], fmt["pixel_format"]
    b = np.frombuffer(frame, np.uint8)
    if pix == "YUYV":
        u = b[1::4].reshape(h, w // 2).astype(float)
        v = b[3::4].reshape(h, w // 2).astype(float)
        return luma(frame, fmt), (u[0::2] + u[1::2]) / 2, (v[0::2] + v[1::2]) / 2
    if pix == "NV12":
        uv = b[w * h :].reshape(h // 2, w // 2, 2)
        return luma(frame, fmt), uv[:, :, 0], uv[:, :, 1]
    if pix == "MJPG":
        return mjpeg_planes([frame], fmt)[0]
    if pix == "Z16":
        return b[1::2].reshape(h, w), None, None  # as Y16: the high byte of each sample
    if pix in BAYER_OPENCV:
        # Luma from OpenCV's demosaic; chroma once a 2x2 block from its own red, blue and mean
        # green (4:2:0 needs no more), both by BT.601's full-range equations.
        mosaic = b.reshape(h, w).astype(float)
        sites = {"BA81": "BGGR", "GBRG": "GBRG", "GRBG": "GRBG", "RGGB": "RGGB"}[pix]
        at = lambda i: mosaic[i // 2 :: 2, i % 2 :: 2]
        red = at(sites.index("R"))
        blue = at(sites.index("B"))
        green = (at(sites.index("G")) + at(sites.rindex("G"))) / 2
        u = -0.168736 * red - 0.331264 * green + 0.5 * blue + 128
        v = 0.5 * red - 0.418688 * green - 0.081312 * blue + 128
        return luma(frame, fmt), np.clip(u, 0, 255), np.clip(v, 0, 255)
    return luma(frame, fmt), None, None


def mjpeg_planes(jpegs, fmt):
    """JPEGs decoded by ffmpeg to their own YCbCr planes (no colour conversion), as 4:2:0."""
    w, h = fmt["width"], fmt["height"]
    stream = b"".join(jpegs)
    native = json.loads(subprocess.run(
        ["ffprobe", "-v", "error", "-f", "mjpeg", "-show_entries", "stream=pix_fmt", "-of", "json", "-"],
        input=jpegs[0], check=True, capture_output=True).stdout)["streams"][0]["pix_fmt"]
    rows = {"yuvj420p": h // 2, "yuvj422p": h, "yuvj444p": h, "gray": 0}.get(native) if native else None
    if rows is None:
        fail(f"an MJPEG frame decodes as {native}, which this check does not know")
    columns = w if native == "yuvj444p" else w // 2
    raw = subprocess.run(["ffmpeg", "-v", "error", "-f", "mjpeg", "-i", "-", "-f", "rawvideo", "-pix_fmt", native, "-"],
                         input=stream, check=True, capture_output=True).stdout
    size = w * h + 2 * rows * columns
    out = []
    for index in range(len(jpegs)):
        picture = np.frombuffer(raw[index * size : (index + 1) * size], np.uint8)
        y = picture[: w * h].reshape(h, w)
        if not rows:
            out.append((y, None, None))
            continue
        planes = []
        for c in range(2):
            plane = picture[w * h + c * rows * columns : w * h + (c + 1) * rows * columns].reshape(rows, columns).astype(float)
            if columns == w:
                plane = (plane[:, 0::2] + plane[:, 1::2]) / 2
            if rows == h:
                plane = (plane[0::2] + plane[1::2]) / 2
            planes.append(plane)
        out.append((y, planes[0], planes[1]))
    return out


def check_mp4(session, out):
    out = Path(out)
    cameras = session.cameras()
    names = sorted(p.name for p in out.iterdir())
    if names != sorted(f"{c['id']}.mp4" for c in cameras):
        fail(f"{out} holds {names}, expected one .mp4 a camera")
    for camera in cameras:
        fmt = camera["format"]
        w, h = fmt["width"], fmt["height"]
        path = out / f"{camera['id']}.mp4"
        probe = json.loads(subprocess.run(
            ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,profile,pix_fmt,width,height,level:format=format_name",
             "-of", "json", str(path)], check=True, capture_output=True, text=True).stdout)
        stream = probe["streams"][0]
        got = (stream["codec_name"], stream["profile"], stream["pix_fmt"], stream["width"], stream["height"])
        # JPEG's and a demosaic's samples span 0-255 and say so (yuvj420p: full range).
        full = fmt["pixel_format"] == "MJPG" or fmt["pixel_format"] in BAYER_OPENCV
        pix_fmt = "yuvj420p" if full else "yuv420p"
        if got != ("h264", "High", pix_fmt, w, h) or "mp4" not in probe["format"]["format_name"]:
            fail(f"{path}: ffprobe reads {got} in {probe['format']['format_name']}, expected h264 High {pix_fmt} {w}x{h} in mp4")
        # The level a player must decode: small pictures at camera rates need little (a level
        # taken from a wrong frame rate, 6.2, is refused by some phones' decoders).
        if stream.get("level", 99) > 40:
            fail(f"{path}: H.264 level {stream.get('level')} for {w}x{h}, above 4.0")
        frames = session.frames(camera)
        times = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time",
                                "-of", "csv=p=0", str(path)], check=True, capture_output=True, text=True).stdout.split()
        times = sorted(float(t) for t in times)
        if len(times) != len(frames):
            fail(f"{path}: {len(times)} packets, the camera has {len(frames)} frames")
        first = frames[0][0]
        for index, ((t, _), shown) in enumerate(zip(frames, times)):
            if abs((t - first) / 1e9 - shown) > 2 / 90000:
                fail(f"{path}: frame {index} shown at {shown} s, its capture_ns is {(t - first) / 1e9} s after the first")
        # Every decoded frame, not a constant-rate resampling of them (two frames captured close
        # together would be one output frame).
        raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-fps_mode", "passthrough", "-f", "rawvideo",
                              "-pix_fmt", pix_fmt, "-"],
                             check=True, capture_output=True).stdout
        size = w * h * 3 // 2
        if len(raw) != size * len(frames):
            fail(f"{path}: ffmpeg decodes {len(raw) / size} frames, expected {len(frames)}")
        worst = 99.0
        jpeg = mjpeg_planes([f for _, f in frames], fmt) if fmt["pixel_format"] == "MJPG" else None
        for index, (_, frame) in enumerate(frames):
            picture = np.frombuffer(raw[index * size : (index + 1) * size], np.uint8)
            y = picture[: w * h].reshape(h, w)
            u = picture[w * h : w * h + w * h // 4].reshape(h // 2, w // 2)
            v = picture[w * h + w * h // 4 :].reshape(h // 2, w // 2)
            want_y, want_u, want_v = jpeg[index] if jpeg else planes420(frame, fmt)
            worst = min(worst, psnr(y, want_y))
            if want_u is None:
                if np.abs(u.astype(int) - 128).max() > 2 or np.abs(v.astype(int) - 128).max() > 2:
                    fail(f"{path}: frame {index} of a grey camera has colour")
            else:
                worst = min(worst, psnr(u, want_u), psnr(v, want_v))
        if worst < 30:
            fail(f"{path}: a frame's planes are {worst:.1f} dB from the camera's (the floor is 30)")
        print(f"mp4 {camera['id']} ({fmt['pixel_format']}): {len(frames)} frames, times as captured, planes >= {worst:.1f} dB")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["euroc", "images", "mp4"])
    parser.add_argument("session")
    parser.add_argument("output")
    parser.add_argument("--depth", action="append", default=[])
    parser.add_argument("--colour", action="store_true")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--fps", type=float)
    parser.add_argument("--streams", help="the ids exported, comma-separated (default: all)")
    args = parser.parse_args()
    session = Session(args.session, args.streams.split(",") if args.streams else None)
    if args.kind == "euroc":
        check_euroc(session, args.output, args.colour, set(args.depth))
    elif args.kind == "mp4":
        check_mp4(session, args.output)
    else:
        check_images(session, args.output, set(args.depth), args.every, args.fps)
    print("folder ok")


if __name__ == "__main__":
    main()
