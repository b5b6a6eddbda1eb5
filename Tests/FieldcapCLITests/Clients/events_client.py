#!/usr/bin/env python3
"""Watches fieldcap serve's /api/v1/events with the `websockets` library (PyPI), a client
written without fieldcap's code: prints each message as one line, until SECONDS have passed
or an UNTIL event came ("stopped" unless given). Usage: events_client.py URL SECONDS [TOKEN [UNTIL]]"""
import asyncio
import sys
import time

import websockets


async def watch(url, seconds, token, until):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + seconds
    async with websockets.connect(url, extra_headers=headers) as socket:
        print("connected", flush=True)
        while time.monotonic() < deadline:
            try:
                message = await asyncio.wait_for(socket.recv(), deadline - time.monotonic())
            except asyncio.TimeoutError:
                break
            print(message, flush=True)
            if f'"event":"{until}"' in message:
                break


if __name__ == "__main__":
    asyncio.run(watch(sys.argv[1], float(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None,
                      sys.argv[4] if len(sys.argv) > 4 else "stopped"))
