#!/usr/bin/env python3
"""A Foxglove WebSocket client written from the protocol's published specification
(foxglove/ws-protocol, docs/spec.md, subprotocol foxglove.websocket.v1), not from fieldcap's code,
with the `websockets` library (PyPI).

Usage:
  foxglove_client.py check WS_URL API_URL RESULT.json
      Connects (the subprotocol must be chosen), reads serverInfo then advertise, subscribes to
      the first foxglove.CompressedImage channel, the first fieldcap.Sample channel and the
      fieldcap.Status channel, and decodes every message (opcode 0x01, subscription id, log time,
      JSON payload; each image's base64 JPEG must be a whole JPEG Pillow decodes, of the size its
      SOF says).
      First while the rig is idle, then while a 3 s recording started over API_URL runs; after it,
      every IMU sample received whose capture_ns falls in the session must be in the session's
      imu.jsonl with the same values. Then it unsubscribes from the camera (no camera message may
      come 0.5 s after), closes, and reconnects (serverInfo's sessionId unchanged, the same
      channels). Writes what it found to RESULT.json; exits 1 with FAIL lines.
  foxglove_client.py hello WS_URL [TOKEN]
      Connects (with TOKEN as Authorization: Bearer) and prints how many channels were
      advertised; exits 1 when refused.
  foxglove_client.py hostile WS_URL
      Sends what a broken or hostile client might: no subprotocol, a binary message, text that is
      not JSON, an unknown op, subscriptions to no channel, a reused subscription id, a channel
      subscribed twice, ids past 2^32, a 1 MB message; each must be refused or answered with a
      status, never end the server.
  foxglove_client.py stuck WS_URL RESULT.json
      Upgrades by hand (a socket with a 4 kB receive buffer), subscribes to every channel and
      never reads again: prints, and writes, how long until the server closed the connection
      (at most 50 s).
  foxglove_client.py slow WS_URL SECONDS RESULT.json
      Subscribes to every channel and reads one message a second for SECONDS.
  foxglove_client.py watch WS_URL SECONDS RESULT.json
      Subscribes to every channel and reads as fast as it can for SECONDS: counts, rates and the
      delay from each message's log time to its arrival.
"""
import asyncio
import base64
import glob
import io
import json
import os
import socket
import struct
import sys
import time
import urllib.request

import websockets
from PIL import Image

SUBPROTOCOL = "foxglove.websocket.v1"
fails = []


def fail(message):
    print("FAIL:", message, flush=True)
    fails.append(message)


def jpeg_size(data):
    """(width, height) from a JPEG's SOF marker; None when the bytes are not a whole JPEG."""
    if data[:2] != b"\xff\xd8" or data[-2:] != b"\xff\xd9":
        return None
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    return None


def decode(message, subscriptions):
    """A binary messageData: (subscription id, log time ns, payload as JSON)."""
    if not isinstance(message, bytes):
        return None
    if message[0] != 0x01:
        fail(f"binary message with opcode {message[0]:#x}, not messageData")
        return None
    sub, log_time = struct.unpack("<IQ", message[1:13])
    if sub not in subscriptions:
        fail(f"messageData for subscription {sub}, which this client does not hold")
    return sub, log_time, json.loads(message[13:])


async def hello(url, headers=None):
    # A slow reader's close waits behind what the server has queued for it (the library stops
    # reading once 32 messages wait): give up on a clean close after 2 s, not 3 times 10.
    socket = await websockets.connect(url, subprotocols=[SUBPROTOCOL], extra_headers=headers or {},
                                      max_size=64 << 20, close_timeout=2)
    if socket.subprotocol != SUBPROTOCOL:
        fail(f"the server chose subprotocol {socket.subprotocol!r}")
    info = json.loads(await socket.recv())
    if info.get("op") != "serverInfo":
        fail(f"the first message is {info.get('op')!r}, not serverInfo")
    for field, kind in (("name", str), ("capabilities", list)):
        if not isinstance(info.get(field), kind):
            fail(f"serverInfo's {field} is not a {kind.__name__}")
    advertise = json.loads(await socket.recv())
    if advertise.get("op") != "advertise":
        fail(f"the second message is {advertise.get('op')!r}, not advertise")
    channels = advertise.get("channels", [])
    for channel in channels:
        for field in ("id", "topic", "encoding", "schemaName", "schema"):
            if field not in channel:
                fail(f"channel {channel} has no {field}")
        if channel.get("encoding") == "json" and channel.get("schemaEncoding", "jsonschema") == "jsonschema":
            json.loads(channel["schema"])  # a JSON schema must parse
    return socket, info, channels


def api(url, method="GET", body=None):
    request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


class Collector:
    def __init__(self):
        self.by_sub = {}
        self.last_seen = {}

    def take(self, decoded):
        sub, log_time, payload = decoded
        self.by_sub.setdefault(sub, []).append((time.time_ns(), log_time, payload))
        self.last_seen[sub] = time.monotonic()


async def read_for(socket, seconds, collector, subscriptions):
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            message = await asyncio.wait_for(socket.recv(), left)
        except asyncio.TimeoutError:
            return
        if isinstance(message, str):
            status = json.loads(message)
            if status.get("op") == "status" and status.get("level", 0) >= 2:
                fail(f"the server sent an error status: {status}")
            continue
        decoded = decode(message, subscriptions)
        if decoded:
            collector.take(decoded)


async def check(ws_url, api_url, result_path):
    socket, info, channels = await hello(ws_url)
    by_schema = {}
    for channel in channels:
        by_schema.setdefault(channel["schemaName"], []).append(channel)
    camera = (by_schema.get("foxglove.CompressedImage") or [None])[0]
    imu = (by_schema.get("fieldcap.Sample") or [None])[0]
    status = (by_schema.get("fieldcap.Status") or [None])[0]
    clock = (by_schema.get("fieldcap.ClockHealth") or [None])[0]
    if not (camera and imu and status and clock):
        fail(f"advertise lacks a camera, a sensor or the status: {[c['topic'] for c in channels]}")
        return {}
    subscriptions = {10: camera, 11: imu, 12: status, 13: clock}
    await socket.send(json.dumps({"op": "subscribe", "subscriptions": [
        {"id": sub, "channelId": channel["id"]} for sub, channel in subscriptions.items()]}))
    idle = Collector()
    await read_for(socket, 3, idle, subscriptions)
    recording = Collector()
    started = api(f"{api_url}/api/v1/recording/start", "POST", {"duration": "3s"})
    await read_for(socket, 3.5, recording, subscriptions)
    for _ in range(50):
        if api(f"{api_url}/api/v1/status")["state"] == "idle":
            break
        await read_for(socket, 0.2, recording, subscriptions)
    # The camera unsubscribed: nothing for it once what was in flight has come.
    await socket.send(json.dumps({"op": "unsubscribe", "subscriptionIds": [10]}))
    unsubscribed = time.monotonic()
    after = Collector()
    await read_for(socket, 2, after, subscriptions)
    late = after.by_sub.get(10, [])
    if after.last_seen.get(10, 0) > unsubscribed + 0.5:
        fail(f"camera messages came {after.last_seen[10] - unsubscribed:.2f} s after unsubscribe")
    if not after.by_sub.get(11):
        fail("the IMU stopped when the camera was unsubscribed")
    await socket.close()

    again, info_again, channels_again = await hello(ws_url)
    if info_again.get("sessionId") != info.get("sessionId"):
        fail("serverInfo's sessionId changed on reconnection to the same server")
    if [c["topic"] for c in channels_again] != [c["topic"] for c in channels]:
        fail("the channels changed on reconnection")
    await again.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 1, "channelId": imu["id"]}]}))
    reconnected = Collector()
    await read_for(again, 1.5, reconnected, {1: imu})
    if not reconnected.by_sub.get(1):
        fail("no IMU sample after reconnecting")
    await again.close()

    clocks = idle.by_sub.get(13, []) + recording.by_sub.get(13, [])
    if not clocks or not all(isinstance(p.get("streams"), dict) for _, _, p in clocks):
        fail(f"no clock health message, or one without streams: {clocks[:1]}")
    result = {"channels": [c["topic"] for c in channels], "session_id": info.get("sessionId"),
              "clock_streams": sorted({name for _, _, p in clocks for name in p.get("streams", {})}),
              "directory": started.get("directory"), "late_camera_messages": len(late)}
    for name, collector in (("idle", idle), ("recording", recording)):
        images = collector.by_sub.get(10, [])
        samples = collector.by_sub.get(11, [])
        statuses = collector.by_sub.get(12, [])
        sizes = set()
        for _, log_time, payload in images:
            data = base64.b64decode(payload["data"])
            size = jpeg_size(data)
            if size is None:
                fail(f"{name}: an image is not a whole JPEG ({len(data)} bytes)")
            else:
                # Pillow (PyPI) decodes it whole: its pixels, not only its markers.
                picture = Image.open(io.BytesIO(data))
                picture.load()
                if picture.size != size:
                    fail(f"{name}: Pillow reads {picture.size}, the SOF says {size}")
            sizes.add(size)
            if payload.get("format") != "jpeg":
                fail(f"{name}: image format {payload.get('format')!r}")
            stamp = payload["timestamp"]["sec"] * 1_000_000_000 + payload["timestamp"]["nsec"]
            if stamp != log_time:
                fail(f"{name}: an image's timestamp {stamp} is not its log time {log_time}")
        for received, log_time, payload in images + samples + statuses:
            if abs(received - log_time) > 5e9:
                fail(f"{name}: a message's log time is {(received - log_time) / 1e9:.1f} s from now (UTC)")
                break
        result[name] = {"images": len(images), "image_sizes": sorted(sizes), "samples": len(samples),
                        "statuses": [s[2].get("state") for s in statuses]}
        if not images:
            fail(f"{name}: no camera image")
        if not samples:
            fail(f"{name}: no IMU sample")
        if not statuses:
            fail(f"{name}: no status")
    # Every sample received whose capture_ns the session holds has the session's values.
    recorded = {}
    stream = imu["topic"].strip("/")
    for path in sorted(glob.glob(os.path.join(started["directory"], "**", f"{stream}.jsonl"), recursive=True)):
        with open(path) as lines:
            for line in lines:
                record = json.loads(line)
                recorded[record["capture_ns"]] = record["channels"]
    received = [p for _, _, p in recording.by_sub.get(11, [])]
    inside = [p for p in received if recorded and min(recorded) <= p["capture_ns"] <= max(recorded)]
    missing = [p["capture_ns"] for p in inside if p["capture_ns"] not in recorded]
    differ = [p["capture_ns"] for p in inside if p["capture_ns"] in recorded and p["values"] != recorded[p["capture_ns"]]]
    result["imu_compared"] = {"recorded": len(recorded), "received_during": len(inside), "missing": len(missing),
                              "values_differ": len(differ)}
    if len(inside) < 100:
        fail(f"only {len(inside)} IMU samples received within the session ({len(recorded)} recorded)")
    if missing:
        fail(f"{len(missing)} samples received are not in the session, e.g. capture_ns {missing[0]}")
    if differ:
        fail(f"{len(differ)} samples' values differ from the session's, e.g. capture_ns {differ[0]}")
    with open(result_path, "w") as out:
        json.dump(result, out)
    return result


async def hostile(ws_url):
    # No subprotocol: the server must not take the connection as Foxglove's.
    try:
        plain = await websockets.connect(ws_url)
        if plain.subprotocol == SUBPROTOCOL:
            fail("a client that offered no subprotocol was given foxglove.websocket.v1")
        await plain.close()
    except websockets.exceptions.InvalidStatusCode as refused:
        print(f"no subprotocol: refused with {refused.status_code}", flush=True)
    # Another site's page in the rig's browser: refused; Foxglove's web app: served.
    for origin, wanted in (("https://evil.example", False), ("https://app.foxglove.dev", True)):
        try:
            page, _, _ = await hello(ws_url, {"Origin": origin})
            await page.close()
            served = True
        except websockets.exceptions.InvalidStatusCode:
            served = False
        if served != wanted:
            fail(f"a page from {origin} was {'served' if served else 'refused'}")
    socket, _, channels = await hello(ws_url)
    first = channels[0]["id"]
    bad = [
        b"\x01\x00\x00\x00\x00garbage",
        "not json",
        "[1, 2, 3]",
        json.dumps({"op": "advertise", "channels": []}),
        json.dumps({"op": "getParameters", "parameterNames": []}),
        json.dumps({"op": "subscribe"}),
        json.dumps({"op": "subscribe", "subscriptions": [{"id": 1, "channelId": 999999}]}),
        json.dumps({"op": "subscribe", "subscriptions": [{"id": 2 ** 40, "channelId": first}]}),
        json.dumps({"op": "subscribe", "subscriptions": [{"id": -1, "channelId": first}]}),
        json.dumps({"op": "subscribe", "subscriptions": [{"id": 5, "channelId": first}]}),
        json.dumps({"op": "subscribe", "subscriptions": [{"id": 5, "channelId": first}]}),
        json.dumps({"op": "subscribe", "subscriptions": [{"id": 6, "channelId": first}]}),
        json.dumps({"op": "unsubscribe", "subscriptionIds": [77, "x"]}),
        json.dumps({"op": "subscribe", "subscriptions": [{"id": i, "channelId": first} for i in range(1500)]}),
    ]
    answered = 0
    for message in bad:
        await socket.send(message)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            message = await asyncio.wait_for(socket.recv(), deadline - time.monotonic())
        except asyncio.TimeoutError:
            break
        if isinstance(message, str) and json.loads(message).get("op") == "status":
            answered += 1
    print(f"statuses for {len(bad)} bad messages: {answered}", flush=True)
    # Every one answered but the first subscription of id 5; "x" among the unsubscribed ids makes
    # that message invalid as a whole (one status).
    if answered < len(bad) - 1:
        fail(f"only {answered} of {len(bad)} bad messages were answered with a status")
    # A message over the server's limit ends this connection, and only it.
    try:
        await socket.send("x" * (1 << 20))
        await asyncio.wait_for(socket.recv(), 5)
        while True:
            await asyncio.wait_for(socket.recv(), 5)
    except (websockets.exceptions.ConnectionClosed, asyncio.TimeoutError):
        pass
    again, _, _ = await hello(ws_url)
    await again.close()


async def watch(ws_url, seconds, result_path, pace):
    socket, _, channels = await hello(ws_url)
    subscriptions = {index + 1: channel for index, channel in enumerate(channels)}
    await socket.send(json.dumps({"op": "subscribe", "subscriptions": [
        {"id": sub, "channelId": channel["id"]} for sub, channel in subscriptions.items()]}))
    counts, delays, examples = {}, {}, {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            message = await asyncio.wait_for(socket.recv(), max(0.01, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            break
        decoded = decode(message, subscriptions)
        if decoded:
            sub, log_time, payload = decoded
            topic = subscriptions[sub]["topic"]
            if subscriptions[sub]["schemaName"] == "fieldcap.FeedRecord":
                examples[topic] = payload
            counts[topic] = counts.get(topic, 0) + 1
            delays.setdefault(topic, []).append((time.time_ns() - log_time) / 1e6)
        if pace:
            await asyncio.sleep(pace)
    await socket.close()
    result = {"counts": counts, "seconds": seconds, "examples": examples,
              "delay_ms_median": {t: sorted(d)[len(d) // 2] for t, d in delays.items()}}
    with open(result_path, "w") as out:
        json.dump(result, out)
    print(json.dumps(result), flush=True)


def stuck(ws_url, result_path):
    host, port = ws_url[len("ws://"):].split("/")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  f"Sec-WebSocket-Protocol: {SUBPROTOCOL}\r\n\r\n").encode())
    head = sock.recv(64)
    if not head.startswith(b"HTTP/1.1 101"):
        fail(f"the upgrade was answered {head!r}")

    def frame(text):  # a masked text frame, as a client sends
        data, mask = text.encode(), os.urandom(4)
        size = bytes([0x80 | len(data)]) if len(data) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(data))
        return bytes([0x81]) + size + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))

    sock.sendall(frame(json.dumps({"op": "subscribe", "subscriptions": [
        {"id": i, "channelId": i} for i in range(1, 9)]})))
    start, closed = time.monotonic(), None
    sock.setblocking(False)
    while time.monotonic() - start < 50:
        time.sleep(0.5)
        try:
            sock.send(frame('{"op":"unsubscribe","subscriptionIds":[999]}'))
        except (BrokenPipeError, ConnectionResetError):
            closed = time.monotonic() - start
            break
        except BlockingIOError:
            pass
    sock.close()
    result = {"closed_after_s": closed}
    with open(result_path, "w") as out:
        json.dump(result, out)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "check":
        print(json.dumps(asyncio.run(check(*sys.argv[2:5]))), flush=True)
    elif command == "hello":
        async def hello_only(url, token):
            try:
                socket, _, channels = await hello(url, {"Authorization": f"Bearer {token}"} if token else None)
            except (websockets.exceptions.InvalidStatusCode, websockets.exceptions.InvalidHandshake) as refused:
                fail(f"refused: {refused}")
                return
            print(f"{len(channels)} channels", flush=True)
            await socket.close()
        asyncio.run(hello_only(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
    elif command == "hostile":
        asyncio.run(hostile(sys.argv[2]))
    elif command == "stuck":
        stuck(sys.argv[2], sys.argv[3])
    elif command == "slow":
        asyncio.run(watch(sys.argv[2], float(sys.argv[3]), sys.argv[4], pace=1.0))
    elif command == "watch":
        asyncio.run(watch(sys.argv[2], float(sys.argv[3]), sys.argv[4], pace=0))
    sys.exit(1 if fails else 0)
