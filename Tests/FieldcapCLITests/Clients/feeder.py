"""A program feeding a fieldcap feed: records at a rate, or as fast as it can.

    feeder.py SOCKET --rate HZ --seconds S      paced: HZ records a second, in 1 ms batches
    feeder.py SOCKET --flood --seconds S        as fast as the socket takes them

Each record carries its own capture_ns (CLOCK_MONOTONIC_RAW) and its index; prints how many it sent.
"""
import argparse
import json
import os
import socket
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("socket")
parser.add_argument("--rate", type=float, default=0)
parser.add_argument("--flood", action="store_true")
parser.add_argument("--seconds", type=float, default=2)
arguments = parser.parse_args()

for _ in range(100):
    if os.path.exists(arguments.socket):
        break
    time.sleep(0.05)
feed = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
feed.connect(arguments.socket)
now = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
start = now()
end = start + int(arguments.seconds * 1e9)
sent = 0
try:
    while now() < end:
        if arguments.flood:
            due = sent + 256
        else:
            due = int((now() - start) / 1e9 * arguments.rate) + 1
        lines = []
        batch = sent
        while batch < due:
            lines.append(json.dumps({"capture_ns": now(), "channels": {"i": batch, "xyz": [0.5, -1.25, batch * 1e-3]}}))
            batch += 1
        if lines:
            feed.sendall(("\n".join(lines) + "\n").encode())
        sent = batch
        if not arguments.flood:
            time.sleep(0.001)
except BrokenPipeError:
    # The recording stopped first: what was sent before is what counts (and the test says so).
    print(f"the recording closed the feed after {sent} records", file=sys.stderr)
feed.close()
print(sent)
