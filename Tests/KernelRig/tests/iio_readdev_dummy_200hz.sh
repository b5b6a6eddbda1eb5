#!/bin/bash
# rig-timeout: 90
# rig-share: 10
# iio_readdev reads buffered samples from the IIO dummy device, triggered by
# the rig's hrtimer trigger at 200 Hz, with current_timestamp_clock set to
# monotonic_raw. Checks: sample count, the dummy's fixed channel values, the
# timestamp channel strictly increasing, inside the CLOCK_MONOTONIC_RAW window
# of the capture, and spaced 5 ms apart on average (±20%).
#
# The trigger is attached through sysfs, not with `iio_readdev -t`: libiio
# 0.24's iio_readdev -t resets the trigger's sampling_frequency to 100 Hz.
set -euo pipefail
dev=${FIELDCAP_IIO_DEVICE:?not in the kernel rig guest}
D=${FIELDCAP_IIO_DEVICE_SYSFS:?}
T=${FIELDCAP_IIO_TRIGGER_SYSFS:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
rate=200
samples=200
out="$FIELDCAP_TEST_TMP/samples.bin"

cleanup() { echo 0 > "$D/buffer/enable" 2>/dev/null || true; }
trap cleanup EXIT
echo 0 > "$D/buffer/enable"   # current_timestamp_clock is EBUSY while enabled

echo monotonic_raw > "$D/current_timestamp_clock"
clock=$(cat "$D/current_timestamp_clock")
[ "$clock" = monotonic_raw ] || { echo "current_timestamp_clock reads back '$clock'"; exit 1; }

echo "$trig" > "$D/trigger/current_trigger"
echo "$rate" > "$T/sampling_frequency"
freq=$(cat "$T/sampling_frequency")
[ "${freq%%.*}" = "$rate" ] || { echo "trigger sampling_frequency reads back $freq, wanted $rate"; exit 1; }

# every scan element, timestamp included; the kernel buffer holds 4 reads' worth
for e in "$D"/scan_elements/*_en; do echo 1 > "$e"; done
echo 256 > "$D/buffer/length"

/usr/bin/python3 - "$dev" "$samples" "$rate" "$out" <<'PY'
import os, statistics, struct, subprocess, sys, time

dev, samples, rate, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
RAW = time.CLOCK_MONOTONIC_RAW
t0 = time.clock_gettime_ns(RAW)
with open(out, "wb") as f:
    r = subprocess.run(["iio_readdev", "-b", "64", "-s", str(samples), dev],
                       stdout=f, stderr=subprocess.PIPE, timeout=60)
t1 = time.clock_gettime_ns(RAW)
err = r.stderr.decode(errors="replace").strip()
if r.returncode != 0:
    sys.exit(f"iio_readdev exited {r.returncode}: {err}")

data = open(out, "rb").read()
# scan: voltage0 u16, voltage1-voltage2 s16, voltage3-voltage4 s16, accel_x s16,
# then the s64 timestamp (8-byte aligned): 16 bytes, no padding
SCAN = struct.Struct("<Hhhhq")
fails = []
if len(data) % SCAN.size:
    fails.append(f"{len(data)} bytes is not a whole number of {SCAN.size}-byte scans")
scans = [SCAN.unpack_from(data, i) for i in range(0, len(data) - len(data) % SCAN.size, SCAN.size)]
if len(scans) != samples:
    fails.append(f"expected {samples} samples, got {len(scans)}")
bad_vals = [s[:4] for s in scans if s[:4] != (7, -33, -2, 344)]
if bad_vals:
    fails.append(f"{len(bad_vals)} scans with unexpected channel values, e.g. {bad_vals[0]} (dummy's fakedata is 7, -33, -2, 344)")
ts = [s[4] for s in scans]
back = [i for i in range(1, len(ts)) if ts[i] <= ts[i - 1]]
if back:
    i = back[0]
    fails.append(f"timestamps not strictly increasing at {len(back)} places, first at sample {i}: {ts[i-1]} -> {ts[i]}")
if ts and (ts[0] < t0 or ts[-1] > t1):
    fails.append(f"timestamps {ts[0]}..{ts[-1]} ns outside the CLOCK_MONOTONIC_RAW window {t0}..{t1} of the capture")
if len(ts) > 2:
    d = [(b - a) / 1e6 for a, b in zip(ts, ts[1:])]
    want = 1000.0 / rate
    mean = (ts[-1] - ts[0]) / 1e6 / (len(ts) - 1)
    med = statistics.median(d)
    print(f"{len(ts)} samples; spacing ms: mean {mean:.3f}, median {med:.3f}, min {min(d):.3f}, max {max(d):.3f} "
          f"(nominal {want:.3f}); window {(t1 - t0) / 1e6:.0f} ms; first sample {(ts[0] - t0) / 1e6:.1f} ms after start")
    for name, v in (("mean", mean), ("median", med)):
        if abs(v - want) > 0.2 * want:
            fails.append(f"{name} spacing {v:.3f} ms is not within 20% of {want:.3f} ms ({rate:g} Hz)")
if err:
    print(f"iio_readdev stderr: {err}")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PY

freq=$(cat "$T/sampling_frequency")
[ "${freq%%.*}" = "$rate" ] || { echo "trigger sampling_frequency is $freq after the capture, wanted $rate"; exit 1; }
echo "trigger still at $freq Hz; clock $clock"
