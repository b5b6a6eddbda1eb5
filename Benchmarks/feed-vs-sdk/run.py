#!/usr/bin/env python3
"""A stream fed to fieldcap by a local program against the same records through the SyncField
library in-process, side by side in one run (issue 49).

    swift build -c release --product fieldcap --product FeedBench
    python3 Benchmarks/feed-vs-sdk/run.py [--seconds 5] [--rate 1000] [--out DIR]

1. In-process: FeedBench calls SyncSession.record() with the record flat out for S seconds
   (records/s and its CPU per record).
2. Fed: `fieldcap --sensor feed:grip` and a Python program sending the same record as fast as
   the socket takes it for S seconds, each line with its own capture_ns (records/s written, and
   fieldcap's CPU per record written, from the kernel's accounting of the process).
3. Latency: the same, paced at --rate records a second; a reader polls the session's
   grip.jsonl every millisecond and takes, for each line, CLOCK_MONOTONIC_RAW when it first saw
   it minus the line's capture_ns: the time from the program's stamp to the line being in the
   file (p50, p99; the poll adds up to 1 ms).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RAW = time.CLOCK_MONOTONIC_RAW


def now():
    return time.clock_gettime_ns(RAW)


def line(index):
    """The record FeedBench records for `index`, as a program would send it."""
    import math

    t = index * 1e-3
    channels = {
        "force": [math.sin(t), math.cos(t), 9.80665 + t], "torque": [0.01 * t, -0.02, 0.5 + t],
        "width": 0.04 + 1e-6 * t, "grip": {"closed": index & 1, "current": 1.25 + t},
    }
    return '{"capture_ns":%d,"channels":' + json.dumps(channels, separators=(",", ":")) + "}\n"


def cpu_seconds(pid):
    """utime + stime of a process, from /proc (clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def record_with_feed(work, name, seconds, rate=None, tail=False, declared=None):
    """Runs fieldcap with one feed (`rate=declared` on it, or `rate` when paced), sends for
    `seconds`, paced at `rate` or flat out; returns (sent, written, dropped, cpu, latencies)."""
    sock = f"{work}/{name}.sock"
    out = f"{work}/{name}"
    fieldcap = subprocess.Popen(
        [str(ROOT / ".build/release/fieldcap"), "--sensor",
         f"feed:grip,socket={sock}" + (f",rate={declared or rate}" if declared or rate else ""),
         "--out", out, "-q"], stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.01)
    feed = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    feed.connect(sock)
    templates = [line(i) for i in range(1000)]
    latencies = []
    stop_tail = threading.Event()

    def tail_file():
        path = Path(out) / "grip.jsonl"
        offset, partial = 0, b""
        while not stop_tail.is_set():
            if path.exists():
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
                seen = now()
                offset += len(data)
                data = partial + data
                *complete, partial = data.split(b"\n")
                for text in complete:
                    latencies.append(seen - json.loads(text)["capture_ns"])
            time.sleep(0.001)

    tailer = threading.Thread(target=tail_file)
    if tail:
        tailer.start()
    cpu_before = cpu_seconds(fieldcap.pid)
    start = now()
    end = start + int(seconds * 1e9)
    sent = 0
    while now() < end:
        if rate:
            due = int((now() - start) / 1e9 * rate) + 1
        else:
            due = sent + 256
        chunk = []
        while sent < due:
            chunk.append(templates[sent % 1000] % now())
            sent += 1
        if chunk:
            feed.sendall("".join(chunk).encode())
        if rate:
            time.sleep(0.0005)
    feed.close()
    time.sleep(0.5)
    cpu = cpu_seconds(fieldcap.pid) - cpu_before
    fieldcap.send_signal(2)
    fieldcap.wait()
    stop_tail.set()
    if tail:
        tailer.join()
    sidecar = json.loads((Path(out) / "fieldcap.json").read_text())
    stream = next(s for s in sidecar["streams"] if s["id"] == "grip")
    return sent, stream["written"], stream["drops"]["count"], cpu, latencies


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))] if values else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--out")
    arguments = parser.parse_args()
    work = arguments.out or tempfile.mkdtemp(prefix="feed-vs-sdk-")
    os.makedirs(work, exist_ok=True)

    bench = subprocess.run(
        [str(ROOT / ".build/release/FeedBench"), "--seconds", str(arguments.seconds), "--out", f"{work}/sdk"],
        capture_output=True, text=True, check=True)
    sdk = json.loads(bench.stdout)
    sdk_rate = sdk["calls"] / sdk["seconds"]
    sdk_cpu = sdk["cpu_seconds"] / sdk["calls"] * 1e6

    sent, written, dropped, cpu, _ = record_with_feed(work, "flat", arguments.seconds)
    feed_rate = written / arguments.seconds
    feed_cpu = cpu / max(1, written) * 1e6
    # The same with the program's rate declared (rate=100000): the session's writer wakes as
    # often as that rate needs (every 10 ms) rather than for 10 kHz (every 100 ms).
    hsent, hwritten, hdropped, hcpu, _ = record_with_feed(work, "declared", arguments.seconds, declared=100000)
    hinted_rate = hwritten / arguments.seconds
    hinted_cpu = hcpu / max(1, hwritten) * 1e6

    paced_sent, paced_written, paced_dropped, _, latencies = record_with_feed(
        work, "paced", arguments.seconds, rate=arguments.rate, tail=True)

    print(f"machine: {os.cpu_count()} cores; {arguments.seconds} s per run; the record: 3 forces, 3 torques, "
          "a width and a nested grip (closed, current)")
    print()
    print("| path | records/s | CPU per record | notes |")
    print("|---|---:|---:|---|")
    print(f"| SyncField library in-process (SyncSession.record) | {sdk_rate:,.0f} | {sdk_cpu:.2f} µs | "
          f"{sdk['calls']:,} records, one thread, flat out |")
    print(f"| fieldcap --sensor feed: (Unix socket, JSON lines) | {feed_rate:,.0f} | {feed_cpu:.2f} µs | "
          f"{sent:,} sent by a Python program flat out, {written:,} written, {dropped:,} dropped |")
    print(f"| fieldcap --sensor feed:,rate=100000 | {hinted_rate:,.0f} | {hinted_cpu:.2f} µs | "
          f"{hsent:,} sent, {hwritten:,} written, {hdropped:,} dropped |")
    print(f"| ratio feed / in-process | {feed_rate / sdk_rate:.2f}x | {feed_cpu / sdk_cpu:.2f}x | "
          f"with rate=100000: {hinted_rate / sdk_rate:.2f}x, {hinted_cpu / sdk_cpu:.2f}x |")
    print()
    print(f"Latency at {arguments.rate} records/s, from the program's capture_ns to the line in the file "
          f"({paced_written:,} of {paced_sent:,} written, {paced_dropped} dropped): "
          f"p50 {percentile(latencies, 50) / 1e6:.1f} ms, p99 {percentile(latencies, 99) / 1e6:.1f} ms, "
          f"max {max(latencies) / 1e6:.1f} ms" if latencies else "no latency measured")


if __name__ == "__main__":
    sys.exit(main())
