#!/usr/bin/env python3
"""Hostile programs against a fieldcap feed socket, on raw sockets.

    hostile_feed.py SOCKET

In turn: a program that sends NUL bytes, invalid UTF-8, a 10 MB line without an end, and
disconnects; then one that sends half a line and holds the connection (slowloris) while 300
others connect and each sends a 1 MB line; those are left open. Prints one JSON object: how many
connections were made, how many the feed answered with its refusal, and the ready lines seen.
The caller then stops the recording (SIGTERM) while the slowloris and the rest still hold theirs.
"""
import json
import socket
import sys
import time

path = sys.argv[1]
report = {"connections": 0, "refused": 0, "ready": 0}


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    report["connections"] += 1
    return s


def first_line(s, timeout=2.0):
    s.settimeout(timeout)
    try:
        return s.recv(4096).decode(errors="replace")
    except (socket.timeout, OSError):
        return ""


garbage = connect()
if first_line(garbage).startswith("fieldcap: ready"):
    report["ready"] += 1
garbage.sendall(b"\x00\x00\x00\n\xff\xfe\xfd{\"channels\":{\"\xc3\x28\":1}}\n")
chunk = b"[" * 65536
for _ in range(160):  # 10 MB, no newline
    garbage.sendall(chunk)
garbage.close()
time.sleep(0.3)

slow = connect()
if first_line(slow).startswith("fieldcap: ready"):
    report["ready"] += 1
slow.sendall(b'{"channels": {"a": ')
held = []
for _ in range(300):
    try:
        s = connect()
    except OSError:
        continue
    s.setblocking(False)
    try:
        s.send(b'{"channels":{"a":' + b"1" * 1_000_000)
    except OSError:
        pass
    held.append(s)
time.sleep(0.5)
for s in held:
    s.setblocking(True)
    if "already has a program" in first_line(s, 0.05):
        report["refused"] += 1
print(json.dumps(report), flush=True)
# Held open until the caller has stopped the recording.
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 3)
