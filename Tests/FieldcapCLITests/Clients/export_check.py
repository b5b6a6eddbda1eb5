#!/usr/bin/env python3
"""Judges a fieldcap export with the readers its users run, against the session it came from.

    export_check.py mcap SESSION FILE.mcap [--depth ID ...]
    export_check.py rosbag2 SESSION BAGDIR

The session is read as the SyncField format and fieldcap's sidecar describe it (JSON lines, the
sync point, Matroska videos through ffmpeg), never through fieldcap's code. The MCAP file is
read with the Python `mcap` library (indexed and, with CRCs checked, front to back) and decoded
with `mcap-ros2-support`; a rosbag2 directory with `rosbags`. Every message is compared: counts
per stream, stamps (UTC through the sync point), log times, image sizes and encodings, the
frames' bytes (equal to the Matroska file's frames as ffmpeg demuxes them, or for FFV1 decodes
them to the captured format; an MJPEG camera's
JPEGs, as CompressedImage, equal to its packets), IMU values, and
CameraInfo against the calibration the sidecar keeps. Prints
one line per stream and "export ok"; exits 1 with the first difference.
"""
import argparse
import json
import math
from pathlib import Path

from session_files import SessionFiles, fail, lines, mkv_frames, mkv_packets

ENCODINGS = {
    "YUYV": ("yuv422_yuy2", 2),
    "GREY": ("mono8", 1),
    "Y16": ("mono16", 2),
    "Z16": ("16UC1", 2),  # depth by definition (V4L2_PIX_FMT_Z16), as REP 118 writes it
    "NV12": ("nv12", 1),
    "BA81": ("bayer_bggr8", 1),
    "GBRG": ("bayer_gbrg8", 1),
    "GRBG": ("bayer_grbg8", 1),
    "RGGB": ("bayer_rggb8", 1),
}


# FFmpeg's names of the captured formats, for a video stored as FFV1.
# FFV1 codes a Bayer mosaic as one grey plane: FFmpeg gives the mosaic back as grey.
FFMPEG_FORMATS = {"YUYV": "yuyv422", "GREY": "gray", "Y16": "gray16le", "Z16": "gray16le", "NV12": "nv12",
                  "BA81": "gray", "GBRG": "gray", "GRBG": "gray", "RGGB": "gray"}


class Session(SessionFiles):
    def __init__(self, directory):
        super().__init__(directory)
        self.streams = {s["id"]: s for s in self.sidecar["streams"]}

    def expected(self, depth, feeds_as_json=True):
        """Per topic: a list of (stamp, check(message)) in recording order. A stream a program fed
        (its sidecar entry's kind "feed") also has its records as JSON, unless in a rosbag2 bag."""
        topics = {}
        for sid, stream in self.streams.items():
            stamps = [line["capture_ns"] for line in lines(self.dir / f"{sid}.timestamps.jsonl")]
            if "format" in stream:
                fmt = stream["format"]
                w, h, pix = fmt["width"], fmt["height"], fmt["pixel_format"]
                if pix == "MJPG":
                    # sensor_msgs/CompressedImage: the camera's JPEGs as they are.
                    packets = mkv_packets(self.dir / f"{sid}.mkv")
                    if len(packets) != len(stamps):
                        fail(f"{sid}: the mkv has {len(packets)} frames, the timestamps {len(stamps)}")
                    topics[f"/{sid}/image_raw/compressed"] = [
                        (self.utc(t), ("jpeg", packet)) for t, packet in zip(stamps, packets)
                    ]
                    continue
                decode_to = None
                if pix == "FFV1":
                    # Lossless: exported as the camera's raw frames, which ffmpeg's FFV1 decoder gives back.
                    pix = stream["encoding"]["captured_pixel_format"]
                    decode_to = FFMPEG_FORMATS[pix]
                encoding, bpp = ENCODINGS[pix]
                if pix == "Y16" and sid in depth:
                    encoding = "16UC1"
                size = w * h * 3 // 2 if pix == "NV12" else w * h * bpp
                frames = mkv_frames(self.dir / f"{sid}.mkv", size, decode_to)
                if len(frames) != len(stamps):
                    fail(f"{sid}: the mkv has {len(frames)} frames, the timestamps {len(stamps)}")
                topics[f"/{sid}/image_raw"] = [
                    (self.utc(t), ("image", w, h, encoding, w * bpp, frame)) for t, frame in zip(stamps, frames)
                ]
                calibration = stream.get("calibration")
                if calibration:
                    # sensor_msgs/CameraInfo from a Kalibr-style entry: K from fx fy cx cy, plumb_bob's
                    # five coefficients (radtan's four and k3 = 0), equidistant's four.
                    fx, fy, cx, cy = calibration["intrinsics"]
                    coeffs = list(calibration["distortion_coeffs"])
                    model = calibration["distortion_model"]
                    if model == "equidistant":
                        ros_model = "equidistant"
                    else:
                        ros_model = "rational_polynomial" if len(coeffs) > 5 else "plumb_bob"
                        coeffs = (coeffs + [0.0] * 5)[: max(5, len(coeffs))]
                    info = ("info", w, h, ros_model, coeffs, [fx, 0, cx, 0, fy, cy, 0, 0, 1])
                    topics[f"/{sid}/camera_info"] = [(self.utc(t), info) for t in stamps]
            else:
                samples = lines(self.dir / f"{sid}.jsonl")
                # Nested channels are named by their path, as fieldcap flattens them:
                # `force[0]`, `joints.wrist[1]`, each line's values read the same way.
                for sample in samples:
                    sample["flat"] = flatten(sample["channels"])
                names = stream.get("channels") or list(samples[0]["flat"])
                if stream.get("kind") == "feed" and feeds_as_json:
                    topics[f"/{sid}/json"] = [(self.utc(s["capture_ns"]), ("json", s["channels"])) for s in samples]
                if "gnss" in stream:
                    # A GNSS receiver's fixes as gpsd reported them: NavSatFix (and JSON), no
                    # list of channels (a fix's shape changes with its mode).
                    topics[f"/{sid}/fix"] = [(self.utc(s["capture_ns"]), ("fix", s["channels"])) for s in samples]
                    continue
                accel = [f"accel_{a}" for a in "xyz"]
                gyro = [next((f"{p}_{a}" for p in ("anglvel", "gyro") if f"{p}_{a}" in names), None) for a in "xyz"]
                has_accel, has_gyro = any(n in names for n in accel), any(gyro)
                # ROS's sensor_msgs/Imu: a vector the IMU does not measure has the first element
                # of its covariance -1 (and zeros); an axis missing from one it has is NaN.
                def vector(sample, axes, present):
                    if not present:
                        return None
                    return [sample["flat"].get(n, math.nan) if n else math.nan for n in axes]

                if has_accel or has_gyro:
                    topics[f"/{sid}/imu"] = [
                        (self.utc(s["capture_ns"]), ("imu", vector(s, gyro, has_gyro), vector(s, accel, has_accel)))
                        for s in samples
                    ]
                others = [n for n in names if n not in accel and n not in gyro]
                if others:
                    topics[f"/{sid}/channels"] = [
                        (self.utc(s["capture_ns"]), ("channels", others, [s["flat"].get(n) for n in others]))
                        for s in samples
                    ]
        return topics


def flatten(value, path=""):
    """A record's channels as {path: number}, in the line's order."""
    if isinstance(value, dict):
        flat = {}
        for key, inner in value.items():
            flat.update(flatten(inner, f"{path}.{key}" if path else key))
        return flat
    if isinstance(value, list):
        flat = {}
        for index, inner in enumerate(value):
            flat.update(flatten(inner, f"{path}[{index}]"))
        return flat
    return {path: value}


class JSONDecoders:
    """The mcap library's decoder factory for JSON messages (a fed stream's records)."""

    def decoder_for(self, message_encoding, schema):
        if message_encoding == "json" and schema is not None and schema.encoding == "jsonschema":
            return lambda data: json.loads(data)
        return None


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) if isinstance(a, float) and math.isnan(a) else abs(a - b) <= 1e-9 * max(1, abs(b))


def check(topic, expected, stamp_ns, log_time, msg):
    # A JSON message has no header: its log time is its stamp.
    stamp = log_time if isinstance(msg, dict) else msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
    if stamp != expected[0] or (log_time is not None and log_time != expected[0]):
        fail(f"{topic}: stamp {stamp} / log time {log_time}, the session says {expected[0]}")
    kind = expected[1][0]
    if kind == "json":
        if msg != expected[1][1]:
            fail(f"{topic}: {msg}, the session's line has {expected[1][1]}")
        return
    if kind == "fix":
        fix = expected[1][1]
        mode = fix.get("mode", 0)
        status = -1 if mode < 2 else (2 if fix.get("status", 1) in (2, 3, 4) else 0)
        want = [fix.get("lat", math.nan) if mode >= 2 else math.nan, fix.get("lon", math.nan) if mode >= 2 else math.nan,
                fix.get("altHAE", math.nan) if mode >= 3 else math.nan]
        got = [msg.latitude, msg.longitude, msg.altitude]
        if msg.status.status != status or msg.status.service != 1 or not all(same(a, b) for a, b in zip(got, want)):
            fail(f"{topic}: status {msg.status.status} {got}, gpsd's fix says status {status} {want}")
        errors = [fix[k] for k in ("epx", "epy", "epv") if k in fix]
        if len(errors) == 3:
            if msg.position_covariance_type != 2 or not all(
                same(msg.position_covariance[i * 4], errors[i] ** 2) for i in range(3)):
                fail(f"{topic}: covariance {list(msg.position_covariance)}, gpsd's errors {errors}")
        elif msg.position_covariance_type != 0:
            fail(f"{topic}: covariance type {msg.position_covariance_type} without gpsd's three errors")
        return
    if kind == "image":
        _, w, h, encoding, step, frame = expected[1]
        if (msg.width, msg.height, msg.encoding, msg.step, msg.is_bigendian) != (w, h, encoding, step, 0):
            fail(f"{topic}: {msg.width}x{msg.height} {msg.encoding} step {msg.step}, expected {w}x{h} {encoding} step {step}")
        if bytes(msg.data) != frame:
            fail(f"{topic}: a frame's bytes differ from the Matroska file's (stamp {stamp})")
    elif kind == "jpeg":
        if msg.format != "jpeg" or bytes(msg.data) != expected[1][1]:
            fail(f"{topic}: format {msg.format!r}, or a JPEG's bytes differ from the Matroska file's (stamp {stamp})")
    elif kind == "imu":
        _, gyro, accel = expected[1]
        got_gyro = [msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z]
        got_accel = [msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z]
        for name, got, want, covariance in (
            ("angular_velocity", got_gyro, gyro, msg.angular_velocity_covariance),
            ("linear_acceleration", got_accel, accel, msg.linear_acceleration_covariance),
        ):
            if want is None:
                if covariance[0] != -1 or got != [0.0, 0.0, 0.0]:
                    fail(f"{topic}: {name} {got} covariance[0] {covariance[0]}: not marked unknown (the IMU lacks it)")
            elif covariance[0] == -1 or not all(same(a, b) for a, b in zip(got, want)):
                fail(f"{topic}: {name} {got} (covariance[0] {covariance[0]}), the session says {want}")
        if msg.orientation_covariance[0] != -1:
            fail(f"{topic}: orientation not marked unknown (covariance[0] {msg.orientation_covariance[0]})")
    elif kind == "info":
        _, w, h, model, d, k = expected[1]
        if (msg.width, msg.height, msg.distortion_model) != (w, h, model):
            fail(f"{topic}: {msg.width}x{msg.height} {msg.distortion_model}, expected {w}x{h} {model}")
        if not all(same(a, b) for a, b in zip(list(msg.k), k)) or len(msg.d) != len(d):
            fail(f"{topic}: K {list(msg.k)} D {list(msg.d)}, the calibration says K {k} D {d}")
        if not all(same(a, b) for a, b in zip(list(msg.d), d)):
            fail(f"{topic}: D {list(msg.d)}, the calibration says {d}")
    elif kind == "channels":
        _, names, values = expected[1]
        if list(msg.names) != names:
            fail(f"{topic}: channels {list(msg.names)}, the session has {names}")
        if not all(same(a, math.nan if b is None else float(b)) for a, b in zip(msg.values, values)):
            fail(f"{topic}: values {list(msg.values)}, the session says {values}")


def check_mcap(session, path, depth):
    from mcap.reader import NonSeekingReader, make_reader
    from mcap_ros2.decoder import DecoderFactory

    expected = session.expected(depth)
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory(), JSONDecoders()])
        header = reader.get_header()
        if header.profile != "ros2":
            fail(f"profile {header.profile!r}, not ros2")
        summary = reader.get_summary()
        if not summary.chunk_indexes:
            fail("no chunk indexes in the summary")
        counts = {summary.channels[c].topic: n for c, n in summary.statistics.channel_message_counts.items()}
        seen = {topic: 0 for topic in counts}
        last = 0
        for schema, channel, message, ros in reader.iter_decoded_messages(log_time_order=False):
            topic = channel.topic
            if message.log_time < last:
                fail(f"{topic}: log time {message.log_time} before the one before it ({last}): not in time order")
            last = message.log_time
            encodings = ("jsonschema", "json") if topic.endswith("/json") else ("ros2msg", "cdr")
            if (schema.encoding, channel.message_encoding) != encodings:
                fail(f"{topic}: schema {schema.encoding}, messages {channel.message_encoding}")
            if topic not in expected:
                fail(f"{topic}: not a topic the session explains")
            index = seen[topic]
            seen[topic] += 1
            if index >= len(expected[topic]):
                fail(f"{topic}: more messages than the session has records ({len(expected[topic])})")
            check(topic, expected[topic][index], None, message.log_time, ros)
        metadata = {m.name: m.metadata for m in reader.iter_metadata()}
    for topic, records in expected.items():
        if seen.get(topic) != len(records) or counts.get(topic) != len(records):
            fail(f"{topic}: {seen.get(topic)} messages read, {counts.get(topic)} in the statistics, {len(records)} in the session")
        print(f"{topic}: {len(records)} messages equal the session's")
    mapping = metadata.get("fieldcap", {})
    if int(mapping.get("sync_point.monotonic_ns", -1)) != session.mono or int(mapping.get("sync_point.wall_clock_ns", -1)) != session.wall:
        fail(f"metadata 'fieldcap' {mapping} does not hold the session's sync point")
    with open(path, "rb") as f:
        total = sum(1 for _ in NonSeekingReader(f, validate_crcs=True).iter_messages())
    if total != sum(seen.values()):
        fail(f"front to back with CRCs: {total} messages, indexed: {sum(seen.values())}")
    print(f"front to back with CRCs checked: {total} messages")


def check_rosbag2(session, bag, depth):
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    expected = session.expected(depth, feeds_as_json=False)
    seen = {}
    with AnyReader([Path(bag)], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as reader:
        for connection, timestamp, raw in reader.messages():
            topic = connection.topic
            msg = reader.deserialize(raw, connection.msgtype)
            index = seen.get(topic, 0)
            seen[topic] = index + 1
            if topic in expected:
                check(topic, expected[topic][index], None, timestamp, msg)
    for topic, records in expected.items():
        if seen.get(topic) != len(records):
            fail(f"rosbags: {topic}: {seen.get(topic)} messages, the session has {len(records)}")
        print(f"rosbags {topic}: {len(records)} messages equal the session's")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["mcap", "rosbag2"])
    parser.add_argument("session")
    parser.add_argument("output")
    parser.add_argument("--depth", action="append", default=[])
    args = parser.parse_args()
    session = Session(args.session)
    if args.kind == "mcap":
        check_mcap(session, args.output, set(args.depth))
    else:
        check_rosbag2(session, args.output, set(args.depth))
    print("export ok")


if __name__ == "__main__":
    main()
