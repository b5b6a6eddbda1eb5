#!/usr/bin/env python3
"""A stand-in for AllSpark's edge server (WiseLabCMU/AllSpark-edge-server, mobile_client/server.py),
written in our own words from what that server does, with the Python `websockets` library, that
drives one `fieldcap serve --server ws://127.0.0.1:PORT` through it and checks what it sends.

What the real server does, and this one too:
  - on connecting it sends {"type":"clientConfig","config":{...}} and nothing else unasked;
  - it reads one message of at most --max-message bytes (the real one: aiohttp's
    max_msg_size=314572800) and closes with 1009 on a larger one;
  - by "type": clientInfo names the client (no reply); test -> success; chunkSaved -> success
    "Chunk saved info received", and with autoUpload on, {"command":"uploadTimeRange",
    "startTime","endTime"} for that chunk's range; upload without "filename" -> error "Invalid
    upload metadata"; upload -> the file is opened (a failure: error "Failed to write file", the
    metadata kept without a file); any other message without a "filename" -> error "Unknown
    message type"; text that is not JSON -> error "Invalid JSON";
  - a binary message with no open file -> error "Metadata not received yet"; else it is the whole
    file: written, closed, success "Video uploaded successfully";
  - a file goes to UPLOADS/<UTC day>/<video|image|data>/<client>/<filename>: the day from a
    trailing _<unix seconds> in its name (else today), video for .mp4 .mov .mkv .avi .webm .ts,
    image for .jpg .jpeg .png .gif, data for the rest;
  - commands reach the client as {"command","message"} only (plus startTime/endTime for
    uploadTimeRange): no duration, and no stop; the operator page's one button sends
    {"command":"upload"} ("Force Sync Uploads").

  capture_server.py --name NAME --fieldcap FIELDCAP --uploads DIR
prints "listening PORT", reads "api URL" (fieldcap serve's HTTP API) from standard input, runs
the steps below, printing each, and exits 0 when every one went as it should, 1 with the reason
otherwise; it ends by itself after 150 s. The rig is expected to run with
--server-max-message 128K; this server's own limit is 80 KiB, under the rig's, so that the
rig's 1009 handling is exercised too (a second of the rig's uploads is about 5 KB of MP4 and
60 KB of tar, mostly the IMU's lines).

Steps: clientInfo first and nothing answering clientConfig, commands or bad messages (each
shown in the rig's status instead); record starts a recording in the config's 1 s segments; the
server killed and restarted (the rig comes back by itself, recording on); a chunkSaved as each
segment closes; "upload" (Force Sync) sends every finished segment not yet stored, the first
attempt's connection cut after its metadata (the rig sends it again, after a back-off); each
range arrives as an H.264 MP4 a camera, ..._<unix seconds>.mp4 filed under video/, that ffprobe
reads, and a tar ..._<unix seconds>.tar filed under data/ holding the rest of the session (the
frame log with a line for each of the MP4's frames, the sensors, manifest and sidecar); with
autoUpload on, chunkSaved leads to the chunk's upload; a refused upload is not sent again and
the next one's reply is not taken for it; an uploadTimeRange over 128K goes as one upload a
segment; an upload over this server's 80 KiB limit is closed with 1009 and not sent again;
nothing the rig sent drew "Unknown message type".
"""
import argparse
import asyncio
import datetime
import glob
import json
import os
import re
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
parser.add_argument("--uploads", required=True, help="where uploads are stored")
parser.add_argument("--max-message", type=int, default=80 * 1024)
args = parser.parse_args()

CONFIG = {"videoFormat": "mp4", "videoChunkDurationMs": 1000, "videoBufferMaxMB": 200}
VIDEO = {".mp4", ".mov", ".mkv", ".avi", ".webm", ".ts"}
IMAGE = {".jpg", ".jpeg", ".png", ".gif"}


def fail(why):
    print(f"FAIL: {why}", flush=True)
    os._exit(1)


def api(base, path):
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return json.load(response)


class StandIn:
    """The server's side of each connection, and what the test looks at."""

    def __init__(self):
        self.auto_upload = False
        self.refuse_next = False  # the next upload's file cannot be opened
        self.cut_after_metadata = False  # the connection ends after the next upload's metadata
        self.connected = asyncio.Queue()
        self.chunks = []  # chunkSaved messages
        self.metadata = []  # upload metadata messages
        self.stored = []  # (filename, path, size)
        self.refused = []  # filenames whose upload was refused
        self.unknown = []  # messages that drew "Unknown message type" or "Invalid JSON"
        self.closed_1009 = 0

    def place(self, name, client):
        stem, extension = os.path.splitext(name)
        try:
            when = float(stem.split("_")[-1])
        except ValueError:
            when = time.time()
        day = datetime.datetime.fromtimestamp(when, tz=datetime.timezone.utc).strftime("%Y-%m-%d")
        kind = "video" if extension.lower() in VIDEO else "image" if extension.lower() in IMAGE else "data"
        folder = os.path.join(args.uploads, day, kind, re.sub(r"[^a-zA-Z0-9_\-]", "_", client or "unknown"))
        os.makedirs(folder, exist_ok=True)
        return os.path.join(folder, name)

    async def handler(self, socket):
        await socket.send(json.dumps({"type": "clientConfig", "config": CONFIG}))
        client, metadata, target = None, None, None
        await self.connected.put(socket)
        try:
            async for message in socket:
                if isinstance(message, bytes):
                    if metadata is None or target is None:
                        await socket.send(json.dumps({"status": "error", "message": "Metadata not received yet"}))
                        continue
                    with open(target, "wb") as out:
                        out.write(message)
                    self.stored.append((metadata["filename"], target, len(message)))
                    metadata, target = None, None
                    await socket.send(json.dumps({"status": "success", "message": "Video uploaded successfully"}))
                    continue
                try:
                    data = json.loads(message)
                except ValueError:
                    self.unknown.append(message)
                    await socket.send(json.dumps({"status": "error", "message": "Invalid JSON"}))
                    continue
                kind = data.get("type") if isinstance(data, dict) else None
                if kind == "clientInfo":
                    client = data.get("clientName")
                elif kind == "test":
                    await socket.send(json.dumps({"status": "success", "message": "Test message received"}))
                elif kind == "chunkSaved":
                    self.chunks.append(data)
                    await socket.send(json.dumps({"status": "success", "message": "Chunk saved info received"}))
                    if self.auto_upload:
                        await socket.send(json.dumps({"command": "uploadTimeRange", "startTime": data.get("startTime", 0),
                                                      "endTime": data.get("endTime", time.time())}))
                elif kind == "upload":
                    if "filename" not in data:
                        await socket.send(json.dumps({"status": "error", "message": "Invalid upload metadata"}))
                        continue
                    self.metadata.append(data)
                    metadata, target = data, None
                    if self.cut_after_metadata:
                        self.cut_after_metadata = False
                        print(f"ok: metadata {data}; cutting the connection", flush=True)
                        await socket.close()
                        return
                    if self.refuse_next:
                        self.refuse_next = False
                        self.refused.append(data["filename"])
                        await socket.send(json.dumps({"status": "error", "message": "Failed to write file"}))
                        continue
                    target = self.place(data["filename"], client)
                elif not (isinstance(data, dict) and data.get("filename")):
                    self.unknown.append(message)
                    await socket.send(json.dumps({"status": "error", "message": "Unknown message type"}))
        except websockets.ConnectionClosed as closed:
            if closed.rcvd is None and closed.sent is not None and closed.sent.code == 1009:
                self.closed_1009 += 1
            elif closed.sent is not None and closed.sent.code == 1009:
                self.closed_1009 += 1


async def wait_for(predicate, what, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.2)
    fail(f"{what} within {timeout} s")


async def accept(server, what):
    try:
        socket = await asyncio.wait_for(server.connected.get(), 30)
    except asyncio.TimeoutError:
        fail(f"the rig did not connect {what}")
    print(f"ok: connected {what}", flush=True)
    return socket


def check_upload(tar_path, stored):
    """One range's tar and its camera's MP4: the tar holds the session but its video, the MP4 is
    H.264 that ffprobe reads, with a frame for each line of the tar's frame log."""
    folder = tempfile.mkdtemp()
    with tarfile.open(tar_path) as tar:
        tar.extractall(folder, filter="data")
    (name,) = os.listdir(folder)
    session = os.path.join(folder, name)
    files = sorted(os.listdir(session))
    for needed in ("manifest.json", "sync_point.json", "fieldcap.json", "cam0.timestamps.jsonl", "imu0.jsonl"):
        if needed not in files:
            fail(f"{tar_path} holds {files}, no {needed}")
    if "cam0.mkv" in files:
        fail(f"{tar_path} holds the camera's video beside its MP4")
    with open(os.path.join(session, "cam0.timestamps.jsonl")) as log:
        frames = sum(1 for line in log if line.strip())
    stamp = os.path.basename(tar_path)[: -len(".tar")].split("_")[-1]
    video = [p for f, p, _ in stored if f == f"{name}-cam0_{stamp}.mp4"]
    if len(video) != 1 or f"{os.sep}video{os.sep}" not in video[0]:
        fail(f"no MP4 of cam0 filed under video/ beside {tar_path}: {[f for f, _, _ in stored]}")
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-show_entries",
                            "stream=codec_name,nb_read_frames", "-of", "csv=p=0", video[0]],
                           capture_output=True, text=True)
    if probe.stdout.strip() != f"h264,{frames}":
        fail(f"ffprobe reads {video[0]} as {probe.stdout.strip()!r}{probe.stderr}, expected h264 with {frames} frames")
    return f"{os.path.basename(video[0])} (H.264, {frames} frames) and {name}.tar ({len(files)} files)"


async def main():
    server = StandIn()
    listener = await websockets.serve(server.handler, "127.0.0.1", 0, max_size=args.max_message)
    port = listener.sockets[0].getsockname()[1]
    print(f"listening {port}", flush=True)
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    base = line.split()[1]

    def link():
        return api(base, "/api/v1/status")["server"]

    socket = await accept(server, "first")
    await wait_for(lambda: (link().get("last_command") or "").startswith("clientConfig applied"),
                   "the clientConfig in the rig's status", 10)
    print(f"ok: {link()['last_command']}", flush=True)

    await socket.send(json.dumps({"command": "record", "message": ""}))
    await wait_for(lambda: api(base, "/api/v1/status").get("recording"), "a recording after record", 10)
    recording = api(base, "/api/v1/status")["recording"]
    name = recording["name"]
    print(f"recording {name}", flush=True)

    for bad, said in [(json.dumps({"command": "dance", "message": ""}), "unknown command dance"),
                      ("{not json", "not a JSON object"), (b"\x00\x01\x02", "binary message (3 bytes)"),
                      (json.dumps({"hello": 1}), "neither a clientConfig")]:
        await socket.send(bad)
        await wait_for(lambda: said in (link().get("last_command") or ""), f"the rig's status showing {said!r}", 10)
    print("ok: commands and bad messages shown in the status, none answered", flush=True)

    # The server dies: connections cut without a close frame, as a killed process's are.
    for connection in list(listener.websockets):
        connection.transport.abort()
    listener.close()
    await listener.wait_closed()
    print("ok: server killed", flush=True)
    await wait_for(lambda: link()["state"] == "disconnected", "the rig showing disconnected", 10)
    await asyncio.sleep(2)
    if (api(base, "/api/v1/status").get("recording") or {}).get("name") != name:
        fail("the recording did not go on while the server was away")
    listener = await websockets.serve(server.handler, "127.0.0.1", port, max_size=args.max_message)
    socket = await accept(server, "again after the restart")
    await wait_for(lambda: link()["connections"] == 2, "two connections in the status", 10)

    await socket.send(json.dumps({"command": "record", "message": ""}))
    await wait_for(lambda: "cannot record" in (link().get("last_command") or ""), "a second record refused", 10)

    # chunkSaved, as each 1 s segment closes.
    await wait_for(lambda: len(server.chunks) >= 3, "three chunkSaved", 15)
    for chunk in server.chunks:
        if set(chunk) < {"type", "startTime", "endTime", "camera", "size", "format", "fps"} \
                or not chunk["startTime"] < chunk["endTime"] <= time.time() or chunk["camera"] != "cam0":
            fail(f"chunkSaved {chunk}")
    print(f"ok: {len(server.chunks)} chunkSaved, e.g. {server.chunks[0]}", flush=True)

    # Force Sync Uploads, the first attempt cut after its metadata.
    server.cut_after_metadata = True
    await socket.send(json.dumps({"command": "upload", "message": ""}))
    socket = await accept(server, "again after the cut upload")
    cut = server.metadata[0]
    if cut.get("type") != "upload" or cut.get("mimetype") != "video/mp4" \
            or not re.fullmatch(r".+-cam0_\d{10}\.mp4", cut.get("filename", "")):
        fail(f"metadata {cut}")
    await wait_for(lambda: any(stored[0] == cut["filename"] for stored in server.stored),
                   "the cut upload sent again and stored", 30)
    await wait_for(lambda: link()["uploads_pending"] == 0, "every forced upload done", 60)
    if len(server.stored) < 3:
        fail(f"Force Sync stored {len(server.stored)} files")
    print(f"ok: Force Sync stored {len(server.stored)} files, the cut one again", flush=True)
    for filename, path, size in server.stored:
        kind = "video" if filename.endswith(".mp4") else "data"
        if f"{os.sep}{kind}{os.sep}" not in path or not path.endswith(filename):
            fail(f"{filename} stored at {path}")
        day = datetime.datetime.fromtimestamp(int(filename[:-4].split("_")[-1]), tz=datetime.timezone.utc)
        if day.strftime("%Y-%m-%d") not in path:
            fail(f"{filename} not filed under its day: {path}")
    tars = [p for f, p, _ in server.stored if f.endswith(".tar")]
    if not tars:
        fail("Force Sync stored no tar")
    for tar in tars:
        said = check_upload(tar, server.stored)
    print(f"ok: each of {len(tars)} ranges stored as an MP4 ffprobe reads and its tar, e.g. {said}", flush=True)

    # autoUpload: the next chunkSaved brings its chunk.
    before = len(server.stored)
    chunks_before = len(server.chunks)
    server.auto_upload = True
    await wait_for(lambda: len(server.stored) > before, "an automatic upload after chunkSaved", 20)
    server.auto_upload = False
    start = int(server.chunks[chunks_before]["startTime"]) if len(server.chunks) > chunks_before else None
    print(f"ok: autoUpload stored {server.stored[before][0]} (chunk from {start})", flush=True)

    # A refusal is final; the next upload's reply is its own.
    await wait_for(lambda: link()["uploads_pending"] == 0, "the automatic uploads done", 30)
    failures, uploads = link()["upload_failures"], link()["uploads"]
    server.refuse_next = True
    now = time.time()
    await socket.send(json.dumps({"command": "uploadTimeRange", "message": "", "startTime": now - 4.0,
                                  "endTime": now - 3.6}))
    await socket.send(json.dumps({"command": "uploadTimeRange", "message": "", "startTime": now - 3.5,
                                  "endTime": now - 3.1}))
    await wait_for(lambda: link()["upload_failures"] == failures + 1 and link()["uploads"] == uploads + 2,
                   "one refused and the next stored (its MP4 and tar)", 30)
    await asyncio.sleep(3)
    refused = server.refused[0]
    if sum(1 for m in server.metadata if m["filename"] == refused) != 1:
        fail(f"{refused} was sent again after its refusal")
    if "Failed to write file" not in (link().get("last_upload_failure") or ""):
        fail(f"last_upload_failure {link().get('last_upload_failure')}")
    print(f"ok: {refused} refused and not sent again, the next stored: {link()['last_upload_failure']}", flush=True)

    # Over this server's own 80 KiB, under the rig's 128K: closed with 1009, given up.
    failures = link()["upload_failures"]
    now = time.time()
    await socket.send(json.dumps({"command": "uploadTimeRange", "message": "", "startTime": now - 4.6,
                                  "endTime": now - 3.0}))
    await wait_for(lambda: server.closed_1009 >= 1, "an upload over the server's limit closed with 1009", 30)
    await wait_for(lambda: link()["upload_failures"] == failures + 1, "the 1009 upload given up", 15)
    socket = await accept(server, "again after the 1009 close")
    await asyncio.sleep(3)
    over = [m["filename"] for m in server.metadata if m["filesize"] > args.max_message]
    if len(over) != 1:
        fail(f"uploads over the server's limit: {over}, expected one, sent once")
    if "1009" not in (link().get("last_upload_failure") or ""):
        fail(f"last_upload_failure {link().get('last_upload_failure')}")
    print(f"ok: {over[0]} closed with 1009 and not sent again: {link()['last_upload_failure']}", flush=True)

    # Over the rig's 128K: one upload a segment.
    count = len(server.metadata)
    now = time.time()
    await socket.send(json.dumps({"command": "uploadTimeRange", "message": "", "startTime": now - 5.5,
                                  "endTime": now - 2.5}))
    await wait_for(lambda: link()["uploads_pending"] == 0 and len(server.metadata) >= count + 3,
                   "the range split by segment", 40)
    sizes = [m["filesize"] for m in server.metadata[count:]]
    if any(size > 128 << 10 for size in sizes):
        fail(f"a message over 128K: {sizes}")
    print(f"ok: 3 s over the rig's 128K limit went as {len(sizes)} uploads of {sizes} bytes", flush=True)

    if server.unknown:
        fail(f"the rig sent messages the server does not know: {server.unknown}")
    print("ok: nothing the rig sent drew Unknown message type", flush=True)
    print("capture server: every step as expected", flush=True)
    listener.close()


signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
lifetime = threading.Timer(150, lambda: fail("ran out of time (150 s)"))
lifetime.daemon = True
lifetime.start()
asyncio.run(main())
