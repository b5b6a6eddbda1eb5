#!/usr/bin/env python3
"""A capture server in the style of AllSpark, written from the protocol the AllSpark iOS app's
README documents ("WebSocket Communication"), with the Python `websockets` library, that drives
one `fieldcap serve --server ws://127.0.0.1:PORT` through the protocol and checks its answers.

The device name: the README says the app's name is "shown on server's web interface" but not
how it is sent; the app sends {"type": "clientInfo", "clientName": NAME} as its first message
(its ConnectionManager), and this server requires that.

  capture_server.py --name NAME
prints "listening PORT", then reads "api URL" (fieldcap serve's HTTP API) from standard input,
and runs the steps below against the rig that connects, printing each. Exit status 0 when every
step went as the protocol says, 1 with the reason otherwise; it ends by itself after 120 s.

Steps: clientInfo; clientConfig (mkv, 1 s chunks, 200 MB) answered with success; a clientConfig
asking for mp4 answered with an error; record answered with success and a recording running in
1 s segments; an unknown command, malformed JSON, a binary message and a JSON object of no known
kind each answered with an error status while the connection stays up; the server killed for
3 s (the rig shows disconnected, keeps recording) and started again on the same port (the rig
reconnects by itself and says clientInfo again); a second record refused while one runs;
uploadTimeRange over 1.8 s spanning segments: the first attempt's connection is cut after the
metadata message (the rig sends it again, whole, on its next connection), the second is stored
and answered as the README says; the tar holds a session that `fieldcap validate` accepts and
whose records are exactly the recording's records in the range, counted from the segments'
own files and sync points; nothing of the upload is left in the rig's root.
"""
import argparse
import asyncio
import glob
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request

import websockets

parser = argparse.ArgumentParser()
parser.add_argument("--name", required=True)
parser.add_argument("--fieldcap", required=True, help="the fieldcap binary, to validate what was uploaded")
args = parser.parse_args()


def fail(why):
    print(f"FAIL: {why}", flush=True)
    os._exit(1)


def api(base, path):
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return json.load(response)


class Rig:
    """The connection the rig made, as a queue of its messages."""

    def __init__(self):
        self.connected = asyncio.Queue()

    async def handler(self, socket):
        messages = asyncio.Queue()
        await self.connected.put((socket, messages))
        try:
            async for message in socket:
                await messages.put(message)
        except websockets.ConnectionClosed:
            pass
        await messages.put(None)


async def expect_text(messages, what, timeout=15):
    try:
        message = await asyncio.wait_for(messages.get(), timeout)
    except asyncio.TimeoutError:
        fail(f"no {what} within {timeout} s")
    if message is None:
        fail(f"the rig closed the connection instead of sending {what}")
    if not isinstance(message, str):
        fail(f"{what}: a binary message")
    try:
        return json.loads(message)
    except ValueError:
        fail(f"{what}: not JSON: {message!r}")


async def expect_status(messages, status, contains, what):
    answer = await expect_text(messages, f"the answer to {what}")
    if answer.get("status") != status or contains not in answer.get("message", ""):
        fail(f"{what}: answered {answer}, expected status {status} mentioning {contains!r}")
    print(f"ok: {what} -> {answer['status']}: {answer['message']}", flush=True)
    return answer


async def wait_for(predicate, what, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.2)
    fail(f"{what} within {timeout} s")


async def accept(rig, what):
    try:
        socket, messages = await asyncio.wait_for(rig.connected.get(), 20)
    except asyncio.TimeoutError:
        fail(f"the rig did not connect {what}")
    info = await expect_text(messages, "clientInfo")
    if info != {"type": "clientInfo", "clientName": args.name}:
        fail(f"clientInfo: {info}")
    print(f"ok: connected {what}, clientInfo {info['clientName']}", flush=True)
    return socket, messages


def records(session, stream):
    """Each record's capture_ns and its wall clock (ns) through the session's own sync point."""
    with open(os.path.join(session, "sync_point.json")) as f:
        sync = json.load(f)
    with open(os.path.join(session, f"{stream}.timestamps.jsonl")) as f:
        raw = [json.loads(line)["capture_ns"] for line in f]
    return [(t, sync["wall_clock_ns"] + t - sync["monotonic_ns"]) for t in raw]


def check_upload(data, start, end, recording_dir):
    """The tar is one valid session holding exactly the recording's records in [start, end)."""
    folder = tempfile.mkdtemp()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(folder, filter="data")
    (name,) = os.listdir(folder)
    session = os.path.join(folder, name)
    checked = subprocess.run([args.fieldcap, "validate", session], capture_output=True, text=True)
    if checked.returncode != 0:
        fail(f"fieldcap validate of the upload: {checked.stdout}{checked.stderr}")
    start_ns, end_ns = round(start * 1e9), round(end * 1e9)
    with open(os.path.join(session, "manifest.json")) as f:
        streams = json.load(f)["streams"]
    # Finished segments (the one being written has no sync_point.json yet); the range ended
    # seconds before this check, so it lies in finished ones.
    segments = sorted(d for d in glob.glob(os.path.join(recording_dir, "*"))
                      if os.path.isfile(os.path.join(d, "sync_point.json")))
    spanned = set()
    for stream in streams:
        # capture_ns is copied as recorded (one CLOCK_MONOTONIC_RAW across segments); the range
        # is judged through each segment's own sync point.
        got = [raw for raw, _ in records(session, stream)]
        want = []
        for segment in segments:
            if os.path.exists(os.path.join(segment, f"{stream}.timestamps.jsonl")):
                inside = [raw for raw, wall in records(segment, stream) if start_ns <= wall < end_ns]
                if inside:
                    spanned.add(os.path.basename(segment))
                want += inside
        if not want or got != want:
            fail(f"{stream}: {len(got)} records uploaded, {len(want)} recorded in the range")
        print(f"ok: {stream}: {len(got)} records, exactly the recording's in the range", flush=True)
    if len(spanned) < 2:
        fail(f"the range spanned {sorted(spanned)}, not two segments")
    print(f"ok: the upload spans {len(spanned)} segments and validates", flush=True)


async def main():
    rig = Rig()
    server = await websockets.serve(rig.handler, "127.0.0.1", 0, max_size=None)
    port = server.sockets[0].getsockname()[1]
    print(f"listening {port}", flush=True)
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    base = line.split()[1]

    socket, messages = await accept(rig, "first")
    status = api(base, "/api/v1/status")
    if status["server"]["state"] != "connected" or status["server"]["name"] != args.name:
        fail(f"status while connected: {status['server']}")

    config = {"videoFormat": "mkv", "videoChunkDurationMs": 1000, "videoBufferMaxMB": 200}
    await socket.send(json.dumps({"type": "clientConfig", "config": config}))
    await expect_status(messages, "success", "segments of 1s", "clientConfig mkv, 1 s, 200 MB")
    await socket.send(json.dumps({"type": "clientConfig", "config": dict(config, videoFormat="mp4")}))
    await expect_status(messages, "error", "videoFormat mp4", "clientConfig mp4")

    await socket.send(json.dumps({"command": "record", "message": "go"}))
    await expect_status(messages, "success", "recording", "record")
    recording = api(base, "/api/v1/status").get("recording")
    if not recording:
        fail("no recording after record")
    name = recording["name"]

    await socket.send(json.dumps({"command": "dance", "message": "?"}))
    await expect_status(messages, "error", "unknown command dance", "an unknown command")
    await socket.send("{not json")
    await expect_status(messages, "error", "not a JSON object", "malformed JSON")
    await socket.send(b"\x00\x01\x02")
    await expect_status(messages, "error", "binary message (3 bytes)", "a binary message")
    await socket.send(json.dumps({"hello": 1}))
    await expect_status(messages, "error", "neither a clientConfig", "an object of no known kind")

    # The server dies: its connection is cut without a close frame (as a killed process's is),
    # the rig shows it, records on, and comes back by itself.
    for connection in list(server.websockets):
        connection.transport.abort()
    server.close()
    await server.wait_closed()
    print("ok: server killed", flush=True)
    await wait_for(lambda: api(base, "/api/v1/status")["server"]["state"] == "disconnected",
                   "the rig showing disconnected", 10)
    await asyncio.sleep(3)
    if (api(base, "/api/v1/status").get("recording") or {}).get("name") != name:
        fail("the recording did not go on while the server was away")
    server = await websockets.serve(rig.handler, "127.0.0.1", port, max_size=None)
    socket, messages = await accept(rig, "again after the restart")
    await wait_for(lambda: api(base, "/api/v1/status")["server"]["connections"] == 2,
                   "two connections in the status", 10)

    await socket.send(json.dumps({"command": "record"}))
    await expect_status(messages, "error", "already running", "a second record")
    recording = api(base, "/api/v1/status").get("recording") or {}
    if recording.get("name") != name:
        fail("the recording changed")
    print(f"recording {name}", flush=True)

    # uploadTimeRange across segments, the first attempt cut after its metadata.
    await wait_for(lambda: (api(base, "/api/v1/status").get("recording") or {}).get("elapsed_s", 0) > 6,
                   "6 s of recording", 20)
    now = time.time()
    start, end = now - 4.0, now - 2.2
    await socket.send(json.dumps({"command": "uploadTimeRange", "message": "the bump", "startTime": start,
                                  "endTime": end}))
    metadata = await expect_text(messages, "the upload's metadata", 30)
    if set(metadata) != {"filename", "filesize", "mimetype"} or metadata["mimetype"] != "application/x-tar" \
            or not metadata["filename"].endswith(".tar") or not isinstance(metadata["filesize"], int):
        fail(f"metadata {metadata}")
    print(f"ok: metadata {metadata}; cutting the connection", flush=True)
    await socket.close()
    socket, messages = await accept(rig, "again after the cut upload")
    again = await expect_text(messages, "the upload's metadata, again", 30)
    if again["filesize"] <= 0 or again["mimetype"] != "application/x-tar":
        fail(f"metadata again {again}")
    data = await asyncio.wait_for(messages.get(), 60)
    if not isinstance(data, bytes) or len(data) != again["filesize"]:
        fail(f"the upload: {type(data).__name__} of {len(data) if data else 0} bytes, announced {again['filesize']}")
    await socket.send(json.dumps({"status": "success", "message": "Video uploaded successfully"}))
    await expect_status(messages, "success", f"sent {again['filename']}", "the rig's report of the upload")
    check_upload(data, start, end, recording["directory"])
    leftovers = glob.glob(os.path.join(os.path.dirname(recording["directory"]), ".upload-*"))
    if leftovers:
        fail(f"the upload left {leftovers} on the rig")
    print("ok: nothing of the upload left on the rig", flush=True)
    print("capture server: every step as expected", flush=True)
    server.close()


signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
lifetime = threading.Timer(120, lambda: fail("ran out of time (120 s)"))
lifetime.daemon = True
lifetime.start()
asyncio.run(main())
