#!/usr/bin/env python3
"""An SCMF v1 client written from the SimulatorCamera design document (the seed), not from
fieldcap's code: TCP, messages of a little-endian header (magic 0x53434D46 "SCMF", payload length
= total bytes after the magic field's header = 20 + JPEG bytes, timestamp as Float64 seconds,
width, height as 32-bit) and the JPEG. Decodes every JPEG with Pillow.

Connects `--connections` times one after another; on each reads `--frames` messages, then closes.
Prints one JSON object: per connection the frames, their timestamps, sizes, and whether every
JPEG decoded at the header's size.

With `--stalled N`, first opens N connections that never read (small receive buffers, so the
server's writes to them stall at once) and keeps them through the reading connections; then waits
`--stall-wait` seconds and reports, per stalled connection, whether the server had closed it.
"""
import argparse
import io
import json
import socket
import struct
import sys
import time

from PIL import Image

MAGIC = 0x53434D46
HEADER = struct.Struct("<IIdII")  # magic, payloadLength, timestamp, width, height: 24 bytes


def read_exactly(sock, count):
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise EOFError(f"connection closed after {len(data)} of {count} bytes")
        data += chunk
    return bytes(data)


def one_connection(host, port, frames, timeout):
    sock = socket.create_connection((host, port), timeout=timeout)
    result = {"frames": 0, "timestamps": [], "sizes": [], "decoded": 0, "errors": []}
    try:
        for _ in range(frames):
            magic, payload_length, timestamp, width, height = HEADER.unpack(read_exactly(sock, HEADER.size))
            if magic != MAGIC:
                result["errors"].append(f"bad magic {magic:#x}")
                break
            jpeg = read_exactly(sock, payload_length - 20)
            result["frames"] += 1
            result["timestamps"].append(timestamp)
            result["sizes"].append([width, height])
            try:
                image = Image.open(io.BytesIO(jpeg))
                image.load()
                if image.size == (width, height) and image.format == "JPEG":
                    result["decoded"] += 1
                else:
                    result["errors"].append(f"decoded {image.format} {image.size}, header says {width}x{height}")
            except Exception as error:  # noqa: BLE001 - every failure is reported
                result["errors"].append(f"JPEG does not decode: {error}")
    finally:
        sock.close()
    return result


def stalled_connection(host, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, port))
    return sock


def closed_by_server(sock):
    """Drains what the kernel holds for the socket: the server closed it when the end of the
    stream follows; a server still sending keeps the reads busy past a second instead."""
    sock.settimeout(1.0)
    started = time.monotonic()
    try:
        while time.monotonic() - started < 1.0:
            if not sock.recv(65536):
                return True
    except socket.timeout:
        return False
    except OSError:
        return True
    finally:
        sock.close()
    return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9876)
    parser.add_argument("--frames", type=int, default=5)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=20)
    parser.add_argument("--stalled", type=int, default=0)
    parser.add_argument("--stall-wait", type=float, default=7)
    arguments = parser.parse_args()
    stalled = [stalled_connection(arguments.host, arguments.port) for _ in range(arguments.stalled)]
    connections = []
    for _ in range(arguments.connections):
        try:
            connections.append(one_connection(arguments.host, arguments.port, arguments.frames, arguments.timeout))
        except Exception as error:  # noqa: BLE001
            connections.append({"frames": 0, "errors": [f"{type(error).__name__}: {error}"]})
        time.sleep(0.2)
    report = {"connections": connections}
    if stalled:
        time.sleep(arguments.stall_wait)
        report["stalled"] = [{"closed_by_server": closed_by_server(sock)} for sock in stalled]
    json.dump(report, sys.stdout)
    print()


if __name__ == "__main__":
    main()
