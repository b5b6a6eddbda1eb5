#!/bin/bash
# rig-timeout: 150
# rig-share: 30
# A camera unplugged during a recording started over the API (vivid's "Disconnect"): the events
# WebSocket says `stream_away` for it at once, the status shows it away (fieldcap waits for it to
# come back), the IMU records on; it comes back (`stream_returned`) and goes again; the stop over
# the API says the camera ended early (it did not come back the second time), and the session
# validates. vivid is reloaded afterwards for the other tests.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
root=$FIELDCAP_TEST_TMP/serve-root
log=$FIELDCAP_TEST_TMP/serve.log
events=$FIELDCAP_TEST_TMP/events.jsonl
ip link set lo up
"$fieldcap" serve --cam "$dev,size=320x180,fps=30,id=cam" --imu synthetic:100,id=imu --scmf off \
	--root "$root" --listen 127.0.0.1:18081 2>"$log" &
pid=$!
reload() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rmmod vivid 2>/dev/null || true
	modprobe vivid n_devs=2 node_types=0x1,0x1 input_types=0x0,0x0
	for _ in $(seq 50); do [ -e "$dev" ] && break; sleep 0.1; done
}
trap reload EXIT
for _ in $(seq 300); do grep -q '^serving ' "$log" && break; kill -0 "$pid" || { cat "$log"; exit 1; }; sleep 0.1; done

# The events, read by a WebSocket client of a few lines written from RFC 6455 (the guest has no
# WebSocket library): each text message a line of $events, until `stopped`.
/usr/bin/python3 - "$events" <<'PY' &
import base64, json, os, socket, sys
out = open(sys.argv[1], "w", buffering=1)
sock = socket.create_connection(("127.0.0.1", 18081), timeout=60)
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall((f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
data = b""
while b"\r\n\r\n" not in data: data += sock.recv(4096)
head, data = data.split(b"\r\n\r\n", 1)
assert b" 101 " in head.split(b"\r\n")[0], head
def take(count):
    global data
    while len(data) < count:
        more = sock.recv(65536)
        if not more: raise EOFError
        data += more
    part, data = data[:count], data[count:]
    return part
while True:
    first, second = take(2)
    length = second & 0x7F
    if length == 126: length = int.from_bytes(take(2), "big")
    elif length == 127: length = int.from_bytes(take(8), "big")
    payload = take(length)
    if first & 0x0F == 1:
        out.write(payload.decode() + "\n")
        if json.loads(payload).get("event") == "stopped": break
    elif first & 0x0F == 8:
        break
PY
client=$!
sleep 1
# Long enough that only the stop below ends it, however slow the emulated guest.
curl -sS --fail -X POST -d '{"duration":"120s"}' http://127.0.0.1:18081/api/v1/recording/start
echo
for _ in $(seq 100); do grep -q '"written":[1-9]' "$events" 2>/dev/null && break; sleep 0.1; done
sleep 1
# As vivid_disconnect.sh: hold the node open so the disconnect lasts, as an unplugged camera's would.
exec 3<"$dev"
v4l2-ctl -d "$dev" -c disconnect=1
echo "vivid disconnected"
for _ in $(seq 100); do grep -q '"event":"stream_away"' "$events" && break; sleep 0.1; done
# Four statuses (one a second) after the camera ended: the writer closing the camera's file can
# hold the IMU's written count still for a second or more in the emulated guest, while its
# samples wait in the ring (none dropped), so two statuses could show the same count.
for _ in $(seq 300); do
	[ "$(sed -n '/"event":"stream_away"/,$p' "$events" | grep -c '"event":"status"')" -ge 4 ] && break
	sleep 0.1
done
# vivid reconnects once its last other user lets go (fieldcap let the lost node go): the camera
# comes back and is taken up, and the events say so. Then it goes for good.
exec 3<&-
for _ in $(seq 200); do grep -q '"event":"stream_returned"' "$events" && break; sleep 0.1; done
sleep 1
exec 3<"$dev"
v4l2-ctl -d "$dev" -c disconnect=1
for _ in $(seq 100); do [ "$(grep -c '"event":"stream_away"' "$events")" -ge 2 ] && break; sleep 0.1; done
# A status that shows it away a second time: the socket sends the rig's last sample once a
# second, so it can follow the event by up to two seconds.
for _ in $(seq 50); do grep -q '"times_away":2' "$events" && break; sleep 0.1; done
stopped=$(curl -sS --fail -X POST http://127.0.0.1:18081/api/v1/recording/stop)
exec 3<&-
wait "$client"
echo "$stopped"
name=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["name"])' "$stopped")
"$fieldcap" validate "$root/$name"
/usr/bin/python3 - "$events" "$stopped" <<'PY'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
stopped = json.loads(sys.argv[2])
ended = [e for e in events if e["event"] == "stream_away"]
returned = [e for e in events if e["event"] == "stream_returned"]
kinds = [e["event"] for e in events if e["event"] != "status"]
print("events:", kinds)
print("stream_away:", ended)
print("stream_returned:", returned)
streams = {s["id"]: s for s in stopped["streams"]}
fails = []
camera = [e["event"] for e in events if e.get("stream") == "cam" and e["event"].startswith("stream_")]
if camera != ["stream_away", "stream_returned", "stream_away"]:
    fails.append(f"the camera's events are {camera}: away, returned, away was wanted")
if returned and not (returned[0].get("node", "").startswith("/dev/video") and returned[0].get("away_seconds", 0) > 0):
    fails.append("stream_returned does not say the node and the time away")
if "stream_ended" in kinds: fails.append("stream_ended for a camera that is waited for")
if "ended_early" not in streams["cam"]: fails.append("the stop does not say the camera ended early")
if "ended_early" in streams["imu"]: fails.append("the IMU ended too")
# While the camera was away, the status went on showing the IMU moving.
first, back = (events.index(ended[0]), events.index(returned[0])) if ended and returned else (0, 0)
between = [e for e in events[first:back] if e["event"] == "status" and e["state"] == "recording"]
imu = [next(s["written"] for s in e["recording"]["streams"] if s["id"] == "imu") for e in between]
away = [next(s.get("away") for s in e["recording"]["streams"] if s["id"] == "cam") for e in between]
print("IMU written in the statuses while the camera was away:", imu, "cam away:", away)
# The first status after the event may have been sampled just before it.
if len(away) < 2 or not all(away[1:]): fails.append("the status does not show the camera away after it went")
if len(imu) < 2 or imu[-1] <= imu[0]: fails.append("the IMU did not record on after the camera went")
last = [e for e in events if e["event"] == "status" and e["state"] == "recording"][-1]
times = next(s.get("times_away") for s in last["recording"]["streams"] if s["id"] == "cam")
if times != 2: fails.append(f"the last status says times_away {times}, not 2")
if stopped["reason"] != "stopped over the API": fails.append(f"stop reason {stopped['reason']}")
for fail in fails: print("FAIL:", fail)
sys.exit(1 if fails else 0)
PY
