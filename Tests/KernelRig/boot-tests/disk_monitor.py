"""The host side of the slow-disk tests: changes the rig's scratch disk while the guest runs,
through QEMU's monitor (QMP), as the guest asks.

    disk_monitor.py SOCKET SHARE

SOCKET is the monitor `rig run --qmp SOCKET` opens; SHARE a folder the guest sees (`--share`).
The guest asks by making SHARE/request-N (N = 1, 2, ...; written under another name and renamed,
so it is whole when it appears), a JSON object:

    {"bps": 8000000}                      writes throttled to that many bytes a second
    {"stall": 3, "bps": 8000000}          writes stopped (1 byte a second) for 3 s, then at bps

and the monitor answers with SHARE/done-N once it is done (for a stall: once the rate is back),
holding what it did and when (host CLOCK_MONOTONIC). It serves until QEMU closes the monitor
(the guest powered off) or it is killed.
"""
import json
import os
import select
import socket
import sys
import time

path, share = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 120
while True:
    try:
        monitor = socket.socket(socket.AF_UNIX)
        monitor.connect(path)
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("QEMU's monitor never came up")
        time.sleep(0.1)
stream = monitor.makefile("rw")


def command(name, **arguments):
    stream.write(json.dumps({"execute": name, "arguments": arguments}) + "\n")
    stream.flush()
    while True:
        reply = json.loads(stream.readline())
        if "error" in reply:
            sys.exit(f"{name}: {reply['error']}")
        if "return" in reply:
            return


def throttle(bps):
    # The drive's id in the rig; every limit must be given, 0 for none.
    command("block_set_io_throttle", device="rigdisk", bps=0, bps_rd=0, bps_wr=bps, iops=0, iops_rd=0, iops_wr=0)


json.loads(stream.readline())  # the greeting
command("qmp_capabilities")     # QMP takes no other command before this one
number = 1
while True:
    request = f"{share}/request-{number}"
    if not os.path.exists(request):
        # Meanwhile QEMU may send events (read and ignored) or close the monitor: then it is over.
        if select.select([monitor], [], [], 0.05)[0] and not stream.readline():
            sys.exit(0)
        continue
    asked = json.load(open(request))
    done = {"asked": asked, "began": time.monotonic()}
    if "stall" in asked:
        throttle(1)
        print(f"request {number}: writes stopped for {asked['stall']} s", flush=True)
        time.sleep(asked["stall"])
    throttle(asked["bps"])
    print(f"request {number}: writes at {asked['bps']} B/s", flush=True)
    done["ended"] = time.monotonic()
    with open(f"{share}/done-{number}.tmp", "w") as f:
        json.dump(done, f)
    os.rename(f"{share}/done-{number}.tmp", f"{share}/done-{number}")
    number += 1
