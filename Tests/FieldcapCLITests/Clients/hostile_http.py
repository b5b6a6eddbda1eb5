#!/usr/bin/env python3
"""Hostile HTTP clients against fieldcap serve, on raw sockets (no HTTP library smooths them over).

  hostile_http.py HOST PORT cases WAIT
      Opens one connection per case (one that sends nothing, half a request line, garbage, a
      100 kB URL, HTTP/9.9, headers that never end) and waits up to WAIT seconds for the server
      to close each. Prints one JSON object: per case, whether it was closed, after how long, and
      the first line the server answered (if any).

  hostile_http.py HOST PORT head PATH...
      Sends HEAD for each PATH on a connection of its own and reads until the server closes it.
      Prints one JSON object: per path, the status, the headers (lower-case names) and how many
      bytes came after them (a HEAD answer has none, whatever its Content-Length says).

  hostile_http.py HOST PORT flood COUNT SECONDS
      Opens COUNT connections that send nothing and keeps them (reopening each one the server
      closes) for SECONDS; prints how many were open at the end and how many the server closed.
"""
import json
import selectors
import socket
import sys
import time

CASES = {
    "silent": b"",
    "half request line": b"GET /api/v1/sta",
    "garbage": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http at all\r\n\r\n",
    "100 kB URL": b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "HTTP/9.9": b"GET /api/health HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n",
    "headers that never end": b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n",
}


def cases(host, port, wait):
    results = {}
    sockets = {}
    started = time.monotonic()
    for name, payload in CASES.items():
        connection = socket.create_connection((host, port), timeout=5)
        if payload:
            try:
                connection.sendall(payload)
            except OSError:
                pass  # closed while sending: the server refused it early, which is fine
        connection.setblocking(False)
        sockets[name] = (connection, bytearray())
    selector = selectors.DefaultSelector()
    for name, (connection, _) in sockets.items():
        selector.register(connection, selectors.EVENT_READ, name)
    open_names = set(sockets)
    while open_names and time.monotonic() - started < wait:
        for key, _ in selector.select(timeout=0.1):
            name = key.data
            connection, received = sockets[name]
            try:
                chunk = connection.recv(65536)
            except (ConnectionResetError, OSError):
                chunk = b""
            if chunk:
                received.extend(chunk)
                continue
            selector.unregister(connection)
            open_names.discard(name)
            results[name] = {"closed": True, "seconds": round(time.monotonic() - started, 2)}
    for name, (connection, received) in sockets.items():
        result = results.setdefault(name, {"closed": False, "seconds": None})
        result["answer"] = received.split(b"\r\n", 1)[0].decode("latin-1") if received else ""
        connection.close()
    print(json.dumps(results, sort_keys=True))


def head(host, port, paths):
    results = {}
    for path in paths:
        with socket.create_connection((host, port), timeout=10) as connection:
            connection.sendall(f"HEAD {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            received = bytearray()
            while chunk := connection.recv(65536):
                received.extend(chunk)
        header, _, after = bytes(received).partition(b"\r\n\r\n")
        lines = header.decode("latin-1").split("\r\n")
        fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        results[path] = {
            "status": int(lines[0].split(" ")[1]),
            "headers": {name.lower(): value for name, value in fields.items()},
            "bytes_after_headers": len(after),
        }
    print(json.dumps(results, sort_keys=True))


def flood(host, port, count, seconds):
    selector = selectors.DefaultSelector()
    closed = 0

    def open_one():
        connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        connection.setblocking(False)
        connection.connect_ex((host, port))
        selector.register(connection, selectors.EVENT_READ)

    for _ in range(count):
        open_one()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.1):
            try:
                chunk = key.fileobj.recv(4096)
            except OSError:
                chunk = b""
            if not chunk:
                selector.unregister(key.fileobj)
                key.fileobj.close()
                closed += 1
                open_one()
    still_open = len(selector.get_map())
    for key in list(selector.get_map().values()):
        key.fileobj.close()
    print(json.dumps({"open": still_open, "closed_by_server": closed}))


def main():
    host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "cases":
        cases(host, port, float(sys.argv[4]))
    elif mode == "head":
        head(host, port, sys.argv[4:])
    else:
        flood(host, port, int(sys.argv[4]), float(sys.argv[5]))


if __name__ == "__main__":
    main()
