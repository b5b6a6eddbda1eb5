#!/bin/bash
# rig-timeout: 200
# rig-share: 60
# `fieldcap bench jitter` on vivid (start-of-exposure timestamps) and the IIO dummy (200 Hz
# hrtimer trigger): quiet, with two busy threads (--load 2), and with CLOCK_MONOTONIC slewed
# +500 ppm by adjtimex. Each run writes its table, jitter.json and an SVG that parses, and the
# numbers are sane: every period recorded or counted as lost, every record measured, capture_ns
# from the kernel (mapped for the camera, in RAW for the IMU), never after the dequeue, its
# median interval error a small part of a period (but under load, where the emulated kernel
# stamps late), and under the slew the mapping's drift shows the 500 ppm.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
cleanup() {
	busybox adjtimex -f 0 >/dev/null 2>&1 || true
	v4l2-ctl -d "$dev" -c timestamp_source=0 >/dev/null 2>&1 || true
}
trap cleanup EXIT
v4l2-ctl -d "$dev" -c timestamp_source=1

measure() { # measure NAME [EXTRA ARGS...]
	local name=$1; shift
	local report=$FIELDCAP_TEST_TMP/$name
	"$fieldcap" bench jitter --cam "$dev,size=320x180,fps=30,id=cam" --imu "$imu,rate=200,trigger=$trig,id=imu" \
		--duration 8s --report "$report" "$@" | tee "$report.txt"
	/usr/bin/python3 - "$report" "$name" <<'PY'
import json, sys, xml.dom.minidom
report, name = sys.argv[1], sys.argv[2]
xml.dom.minidom.parse(f"{report}/jitter.svg")
doc = json.load(open(f"{report}/jitter.json"))
fails = []
streams = {s["id"]: s for s in doc["streams"]}
for sid, source, rate in (("cam", "kernel, mapped", 30), ("imu", "kernel, RAW", 200)):
    s = streams[sid]
    period = 1e9 / rate
    capture, latency = s["interval_error_capture"], s["dequeue_latency"]
    print(f"{name} {sid}: {s['records']} records, capture interval error median {capture['median_abs_ns'] / 1e3:.1f} µs "
          f"p99 {capture['p99_abs_ns'] / 1e3:.1f} µs, dequeue latency median {latency['median_abs_ns'] / 1e3:.1f} µs")
    if s["capture_ns_source"] != source: fails.append(f"{sid}: capture_ns from {s['capture_ns_source']}")
    # Every period is accounted for, recorded or counted as lost: how many are lost depends on
    # how much CPU the emulated guest gets from a host that may be busy (under --load, the IMU's
    # reader starves and its ring overflows), the accounting does not.
    accounted = s["records"] + s["dropped_in_ring"] + s["skipped_by_device"]
    if accounted < 0.6 * 8 * rate: fails.append(f"{sid}: only {accounted} periods accounted for in 8 s at {rate}/s")
    if s["records"] < 0.1 * 8 * rate: fails.append(f"{sid}: only {s['records']} records in 8 s at {rate}/s")
    if capture["count"] < 0.5 * s["records"]: fails.append(f"{sid}: only {capture['count']} intervals measured")
    # With two busy threads in an emulated guest (on a host that may be busy too), the kernel
    # runs the IIO dummy's handler, which stamps the sample, milliseconds late: that run shows the
    # jitter, it is not held to a tenth of a period.
    if name != "load" and capture["median_abs_ns"] > 0.1 * period:
        fails.append(f"{sid}: median interval error {capture['median_abs_ns']} ns")
    if s["dequeue_after_capture_violations"]: fails.append(f"{sid}: {s['dequeue_after_capture_violations']} dequeued before captured")
    if latency["min_ns"] < 0: fails.append(f"{sid}: negative dequeue latency")
drift = streams["cam"]["clock_mapping"]["drift_ppm"]
if name == "slew" and not 350 <= abs(drift) <= 650: fails.append(f"the slew is not in the mapping's drift: {drift} ppm")
if name != "slew" and abs(drift) > 50: fails.append(f"drift {drift} ppm without a slew")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
}
measure quiet
measure load --load 2
busybox adjtimex -f $((500 * 65536)) >/dev/null
measure slew
