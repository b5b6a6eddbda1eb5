#!/usr/bin/env python3
"""A stand-in for the SyncField alignment service, written from the SyncField SDK README's
"Integration with SyncField Docker" section (not from fieldcap's code), with FastAPI, the usual
stack of such Python services (multipart parsing by python-multipart, as Starlette does it).

It implements the two documented entry points and checks every field they document:

  POST /api/v1/sync          JSON: hosts[{host_id, streams[{stream_id, path?, stream_type?,
                             is_primary?}]}], timestamps_dir. Exactly one is_primary; a video
                             stream has a path that exists; the service "matches
                             {stream_id}.timestamps.jsonl and {stream_id}.jsonl files to streams
                             using the timestamps_dir path", so those must exist there.
  POST /api/v1/sync/upload   multipart: files, timestamp_files (one per file, named
                             {stream_id}.timestamps.jsonl), stream_ids and host_ids
                             (comma-separated, one per file), primary_id (one of stream_ids).

Whatever it receives is stored under --store (HOST/FILENAME) and described in its answer and in
STORE/received.json. A request that breaks the documented shape gets 422 with {"detail": why}.
--fail-with STATUS answers every request with that status and {"detail": "..."}.

  syncfield_service.py --store DIR [--fail-with 500] [--lifetime 120]
prints "listening PORT" once it accepts connections, and exits by itself after --lifetime s.
"""
import argparse
import hashlib
import json
import os
import signal
import socket
import sys
import threading
from typing import List

import uvicorn
from fastapi import FastAPI, File, Form, HTTPException, Request, UploadFile
from fastapi.responses import JSONResponse

parser = argparse.ArgumentParser()
parser.add_argument("--store", required=True)
parser.add_argument("--fail-with", type=int)
parser.add_argument("--lifetime", type=float, default=120)
args = parser.parse_args()
os.makedirs(args.store, exist_ok=True)

app = FastAPI()
received = []


def record(entry):
    received.append(entry)
    with open(os.path.join(args.store, "received.json"), "w") as out:
        json.dump(received, out, indent=1)


@app.middleware("http")
async def failing(request: Request, call_next):
    if args.fail_with:
        # Read the body as a real service would before failing, so the client sends it all.
        await request.body()
        return JSONResponse({"detail": "alignment worker crashed (test service told to fail)"},
                            status_code=args.fail_with)
    return await call_next(request)


def require(condition, why):
    if not condition:
        raise HTTPException(status_code=422, detail=why)


@app.post("/api/v1/sync")
async def sync(request: Request):
    try:
        body = await request.json()
    except Exception:
        raise HTTPException(status_code=422, detail="the body is not JSON")
    require(isinstance(body, dict), "the body is not an object")
    require(set(body) == {"hosts", "timestamps_dir"}, f"unexpected keys {sorted(body)}")
    hosts, ts_dir = body["hosts"], body["timestamps_dir"]
    require(isinstance(ts_dir, str) and ts_dir, "timestamps_dir is not a path")
    require(isinstance(hosts, list) and hosts, "hosts is not a non-empty list")
    primaries, host_ids = [], set()
    for host in hosts:
        require(isinstance(host, dict) and set(host) == {"host_id", "streams"}, f"host entry {host}")
        require(isinstance(host["host_id"], str) and host["host_id"], "host_id")
        require(host["host_id"] not in host_ids, f"host {host['host_id']} twice")
        host_ids.add(host["host_id"])
        require(isinstance(host["streams"], list) and host["streams"], "streams is not a non-empty list")
        for stream in host["streams"]:
            require(isinstance(stream, dict), f"stream entry {stream}")
            require(set(stream) <= {"stream_id", "path", "stream_type", "is_primary"}, f"unexpected keys in {stream}")
            sid = stream.get("stream_id")
            require(isinstance(sid, str) and sid, f"stream_id in {stream}")
            sensor = "stream_type" in stream
            if sensor:
                require(stream["stream_type"] == "sensor", f"{sid}: stream_type {stream['stream_type']}")
                require("path" not in stream, f"{sid}: a sensor stream with a path")
                require(os.path.isfile(os.path.join(ts_dir, f"{sid}.jsonl")), f"{sid}: no {sid}.jsonl in {ts_dir}")
            else:
                require(isinstance(stream.get("path"), str), f"{sid}: a video stream without a path")
                require(os.path.isfile(stream["path"]), f"{sid}: {stream['path']} does not exist")
            require(os.path.isfile(os.path.join(ts_dir, f"{sid}.timestamps.jsonl")),
                    f"{sid}: no {sid}.timestamps.jsonl in {ts_dir}")
            if "is_primary" in stream:
                require(stream["is_primary"] is True, f"{sid}: is_primary is {stream['is_primary']!r}")
                require(not sensor, f"{sid}: a sensor stream as primary")
                primaries.append((host["host_id"], sid))
    require(len(primaries) == 1, f"{len(primaries)} primary streams")
    record({"mode": "volume", "body": body})
    return {"status": "ok", "hosts": len(hosts), "primary": list(primaries[0])}


@app.post("/api/v1/sync/upload")
async def upload(files: List[UploadFile] = File(...), timestamp_files: List[UploadFile] = File(...),
                 stream_ids: str = Form(...), host_ids: str = Form(...), primary_id: str = Form(...)):
    ids, hosts = stream_ids.split(","), host_ids.split(",")
    require(len(files) == len(timestamp_files) == len(ids) == len(hosts),
            f"{len(files)} files, {len(timestamp_files)} timestamp files, {len(ids)} stream ids, {len(hosts)} host ids")
    require(primary_id in ids, f"primary_id {primary_id} is not among the stream ids")
    stored = []
    for data, stamps, sid, host in zip(files, timestamp_files, ids, hosts):
        require(sid and host, "an empty stream or host id")
        require(os.path.splitext(data.filename)[0] == sid, f"file {data.filename} for stream {sid}")
        require(stamps.filename == f"{sid}.timestamps.jsonl", f"timestamp file {stamps.filename} for stream {sid}")
        folder = os.path.join(args.store, host)
        os.makedirs(folder, exist_ok=True)
        for upload_file in (data, stamps):
            path = os.path.join(folder, upload_file.filename)
            require(not os.path.exists(path), f"{host}/{upload_file.filename} twice")
            digest, size = hashlib.sha256(), 0
            with open(path, "wb") as out:
                while chunk := await upload_file.read(1 << 20):
                    out.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
            stored.append({"host": host, "stream": sid, "file": upload_file.filename, "bytes": size,
                           "sha256": digest.hexdigest()})
    record({"mode": "upload", "stream_ids": ids, "host_ids": hosts, "primary_id": primary_id, "stored": stored})
    return {"status": "ok", "job_id": f"job-{len(received)}", "stored": stored}


# A parent that blocks SIGTERM (a test runner that waits for signals itself) passes the mask on;
# unblocked, SIGTERM stops the server at once.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
sock.listen(16)
print(f"listening {sock.getsockname()[1]}", flush=True)
lifetime = threading.Timer(args.lifetime, lambda: os._exit(0))
lifetime.daemon = True  # SIGTERM ends it at once; the timer only ends a forgotten one
lifetime.start()
uvicorn.Server(uvicorn.Config(app, fd=sock.fileno(), log_level="warning")).run()
