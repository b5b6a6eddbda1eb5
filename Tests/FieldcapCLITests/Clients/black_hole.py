#!/usr/bin/env python3
"""A peer that never lets a client finish connecting: what fieldcap's outbound clients (the
capture server's WebSocket, the fleet's MQTT) must give up on, and must never let keep
`fieldcap serve` from stopping.

  black_hole.py MODE [WORKDIR]
prints "listening PORT", then, for each connection, "accepted" once it has it. MODE:

  silent   accepts TCP, reads what comes, never answers (a process stopped under a debugger,
           a firewall that lets SYN through, an MQTT broker that never sends CONNACK)
  tls      a TLS server, as AllSpark's is when its keys/ folder exists: a plain ws:// request
           fails its handshake, and the socket is then held open, silent (aiohttp's own ssl
           server was seen to do so); WORKDIR gets its self-signed certificate
  midway   reads the upgrade request, sends the first line and one header of a 101 answer,
           waits half a second, and closes

It ends when killed, or after 120 s.
"""
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

mode = sys.argv[1]
held = []  # sockets kept open, so none is closed by the garbage collector


def silent(connection):
    held.append(connection)
    try:
        while connection.recv(65536):
            pass
    except OSError:
        pass


def tls(connection, context):
    wrapped = context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
    held.append(wrapped)  # its socket stays open after the failed handshake
    try:
        wrapped.do_handshake()
    except (ssl.SSLError, OSError) as error:
        print(f"handshake failed: {error}", flush=True)
    # The handshake failed on the client's plain HTTP: hold the socket, say nothing more.
    time.sleep(120)


def midway(connection):
    request = b""
    while b"\r\n\r\n" not in request:
        got = connection.recv(4096)
        if not got:
            return
        request += got
    connection.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n")
    time.sleep(0.5)
    connection.close()


def main():
    context = None
    if mode == "tls":
        work = sys.argv[2]
        made = subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{work}/key.pem", "-out",
             f"{work}/cert.pem", "-days", "1", "-subj", "/CN=localhost"], capture_output=True)
        if made.returncode != 0:
            print(f"openssl: {made.stderr.decode()}", flush=True)
            sys.exit(1)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(f"{work}/cert.pem", f"{work}/key.pem")
    elif mode not in ("silent", "midway"):
        print(f"unknown mode {mode}: give silent, tls or midway", flush=True)
        sys.exit(2)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    print(f"listening {listener.getsockname()[1]}", flush=True)
    while True:
        connection, _ = listener.accept()
        print("accepted", flush=True)
        if mode == "silent":
            target, arguments = silent, (connection,)
        elif mode == "tls":
            target, arguments = tls, (connection, context)
        else:
            target, arguments = midway, (connection,)
        threading.Thread(target=target, args=arguments, daemon=True).start()


signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
threading.Timer(120, lambda: os._exit(0)).start()
main()
