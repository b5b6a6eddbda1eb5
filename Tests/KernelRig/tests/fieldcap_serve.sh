#!/bin/bash
# rig-timeout: 180
# rig-share: 60
# fieldcap serve with vivid and the IIO dummy: it opens both devices, a recording is started
# and stopped over HTTP (curl), the status shows both streams moving, the session validates and
# comes back as a tar; SIGTERM during a second recording finishes it. The camera's preview: a
# JPEG while idle (vivid opened for the preview alone), MJPEG on through the recording's start
# with nothing dropped. The status gives each device clock's mapping into RAW (#51): vivid's
# CLOCK_MONOTONIC, as the kernel stamps V4L2 buffers, a few µs read together.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
root=$FIELDCAP_TEST_TMP/serve-root
log=$FIELDCAP_TEST_TMP/serve.log
sysfs=${FIELDCAP_IIO_DEVICE_SYSFS:?}
# The guest's loopback starts down; the service listens on it.
ip link set lo up
echo 0 > "$sysfs/buffer/enable"
"$fieldcap" serve --cam "$dev,size=320x180,fps=30,id=cam" --imu "$imu,rate=200,trigger=$trig,id=imu" \
	--root "$root" --listen 127.0.0.1:18080 2>"$log" &
pid=$!
cleanup() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo 0 > "$sysfs/buffer/enable" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 300); do grep -q '^serving ' "$log" && break; kill -0 "$pid" || { cat "$log"; exit 1; }; sleep 0.1; done
cat "$log"
api() { curl -sS --fail-with-body "$@"; echo; }

api http://127.0.0.1:18080/api/v1/rig | python3 -c '
import json, sys
rig = json.load(sys.stdin)
ids = [d["id"] for d in rig["devices"]]
for d in rig["devices"]: print("device:", d["id"], d["device"], d["summary"])
sys.exit(0 if ids == ["cam", "imu"] else 1)'

# A JPEG's size from its frame header (SOF), and that it is whole (SOI ... EOI).
jpeg_size() {
	python3 -c '
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9", "not a whole JPEG"
at = 2
while at + 9 < len(data):
    marker, length = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
    if marker in (0xC0, 0xC1, 0xC2):
        height, width = struct.unpack(">HH", data[at + 5:at + 9])
        print(f"{width}x{height}")
        sys.exit(0)
    at += 2 + length
sys.exit("no frame header")' "$1"
}
curl -sS --fail -o "$FIELDCAP_TEST_TMP/idle.jpg" http://127.0.0.1:18080/api/v1/preview/cam.jpg
size=$(jpeg_size "$FIELDCAP_TEST_TMP/idle.jpg")
echo "preview while idle: a $size JPEG"
[ "$size" = 320x180 ]
# MJPEG from 2 s before the recording until 6 s into it.
curl -sS -N --max-time 8 -o "$FIELDCAP_TEST_TMP/live.mjpg" http://127.0.0.1:18080/api/v1/preview/cam.mjpg &
viewer=$!
sleep 2
name=$(api -X POST http://127.0.0.1:18080/api/v1/recording/start | python3 -c 'import json, sys; print(json.load(sys.stdin)["name"])')
sleep 4
api http://127.0.0.1:18080/api/v1/status | python3 -c '
import json, sys
status = json.load(sys.stdin)
streams = status["recording"]["streams"]
for s in streams: print(s["id"], s["written"], "written,", round(s["rate"], 1), "/s,", s["dropped"], "dropped")
ok = status["state"] == "recording" and all(s["written"] > 0 and s["dropped"] == 0 for s in streams)
clock = status.get("clocks", {}).get("cam")
print("clocks:", status.get("clocks"))
if not clock or clock["from"] != "CLOCK_MONOTONIC" or clock["pairs"] < 10 or not 0 < clock["bracket_ns"] < 1_000_000:
    print("FAIL: the status has no plausible clock mapping for vivid:", clock)
    ok = False
sys.exit(0 if ok else 1)'
wait "$viewer" || true # curl's time limit ends it
api -X POST http://127.0.0.1:18080/api/v1/recording/stop
"$fieldcap" validate "$root/$name"
python3 - "$FIELDCAP_TEST_TMP/live.mjpg" "$root/$name/sync_point.json" <<'PY'
import json, re, sys
body = open(sys.argv[1], "rb").read()
start = json.load(open(sys.argv[2]))["monotonic_ns"]
times = [int(t) for t in re.findall(rb"X-Capture-Ns: (\d+)", body)]
before, after = sum(t < start for t in times), sum(t > start for t in times)
print(f"MJPEG preview: {len(times)} frames, {before} before the recording's start, {after} during it")
sys.exit(0 if before and after and times == sorted(times) else 1)
PY
mkdir "$FIELDCAP_TEST_TMP/unpacked"
curl -sS --fail http://127.0.0.1:18080/api/v1/sessions/"$name"/archive | tar -x -C "$FIELDCAP_TEST_TMP/unpacked"
diff -r "$root/$name" "$FIELDCAP_TEST_TMP/unpacked/$name"
echo "archive: every file byte for byte"

second=$(api -X POST http://127.0.0.1:18080/api/v1/recording/start | python3 -c 'import json, sys; print(json.load(sys.stdin)["name"])')
sleep 2
kill -TERM "$pid"
wait "$pid"
echo "serve exited $? after SIGTERM"
"$fieldcap" validate "$root/$second"
grep -q '"stop_reason" *: *"service shutdown' "$root/$second/fieldcap.json"
