#!/bin/bash
# rig-timeout: 200
# rig-share: 90
# fieldcap against the real IIO dummy driver and an hrtimer trigger:
# - `fieldcap list` shows the device, its channels with units and scales, and the triggers;
# - bad input (unknown device, channel or trigger, a rate the trigger refuses) gives one clear
#   line, exit 64, and leaves the device as it was;
# - 1 kHz for 6 s: every sample decoded with the device's scale and offset into the expected
#   SI values, capture_ns strictly increasing inside the CLOCK_MONOTONIC_RAW window, and the
#   samples written plus the gaps counted account for the whole timeline (under QEMU's software
#   emulation the hrtimer itself misses ticks at 1 kHz; iio_readdev sees the same);
# - with the timestamp clock kept at realtime and stepped an hour forward during capture
#   (`date -s`), the recorded times stay in MONOTONIC_RAW without a jump; and with its rate
#   stepped by 83,333 ppm (`adjtimex -t`), no sample is lost, repeated or reordered while the
#   samples stamped across the change wait for the next clock pair;
# - without a rate or trigger, fieldcap makes its own hrtimer trigger and removes it afterwards.
set -euo pipefail
dev=${FIELDCAP_IIO_DEVICE:?not in the kernel rig guest}
D=${FIELDCAP_IIO_DEVICE_SYSFS:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
trap 'busybox adjtimex -t 10000 >/dev/null 2>&1 || true' EXIT

out=$("$fieldcap" list)
sed -n '/^IMUs/,$p' <<<"$out" | sed -n 1,12p
for want in "iio:device0  $dev" "accel_x  m/s²" "voltage0  V, scale" "le:s64/64>>0" "$trig (trigger"; do
	grep -qF -- "$want" <<<"$out" || { echo "FAIL: 'fieldcap list' does not show '$want'"; exit 1; }
done

state() { echo "trigger='$(cat "$D/trigger/current_trigger")' clock=$(cat "$D/current_timestamp_clock") buffer=$(cat "$D/buffer/enable")"; }
before=$(state)
expect_usage_error() { # expect_usage_error WANTED_TEXT ARGS...
	local want=$1; shift
	local err status=0
	err=$("$fieldcap" "$@" --duration 1s --out "$FIELDCAP_TEST_TMP/never" 2>&1 >/dev/null) || status=$?
	[ "$status" = 64 ] || { echo "FAIL: fieldcap $* exited $status, wanted 64: $err"; exit 1; }
	[ "$(wc -l <<<"$err")" = 1 ] || { echo "FAIL: fieldcap $* printed more than one line: $err"; exit 1; }
	grep -qF -- "$want" <<<"$err" || { echo "FAIL: fieldcap $*: '$err' lacks '$want'"; exit 1; }
	[ ! -e "$FIELDCAP_TEST_TMP/never" ] || { echo "FAIL: fieldcap $* left a session directory behind"; exit 1; }
	[ "$(state)" = "$before" ] || { echo "FAIL: fieldcap $* changed the device: $(state), was $before"; exit 1; }
	echo "ok: fieldcap $* -> $err"
}
expect_usage_error "no such device" --imu nosuchimu
expect_usage_error "no such device" --imu iio:device9
expect_usage_error "no such channel" --imu "$dev,channels=accel_x+gyro_q"
expect_usage_error "no such trigger" --imu "$dev,trigger=nosuchtrigger"
expect_usage_error "refused" --imu "$dev,trigger=$trig,rate=0.0001"
expect_usage_error "clock 'utc'" --imu "$dev,clock=utc"
expect_usage_error "no such device" --imu "$trig"  # a trigger is not a capture device

raw_now() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW))'; }

# --- 1 kHz for 6 s ------------------------------------------------------------------------
session=$FIELDCAP_TEST_TMP/imu1k
t0=$(raw_now)
"$fieldcap" --imu "$dev,rate=1000,trigger=$trig,channels=voltage0+accel_x,id=imu" --duration 6s --out "$session" -q
t1=$(raw_now)
"$fieldcap" validate -q "$session"
[ "$(state)" = "$before" ] || { echo "FAIL: the device was not put back: $(state), was $before"; exit 1; }
/usr/bin/python3 - "$session" "$t0" "$t1" "$D" <<'PY'
import json, sys
session, t0, t1, sysfs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def attr(name, default):
    try: return float(open(f"{sysfs}/{name}").read())
    except OSError: return default
# What the dummy's fixed raw readings (voltage0 7, accel_x 344) must decode to, from its own
# sysfs scale and offset: voltage in V (the kernel's mV / 1000), acceleration in m/s².
want = {"voltage0": (7 + attr("in_voltage0_offset", 0)) * attr("in_voltage0_scale", 1) / 1000,
        "accel_x": (344 + attr("in_accel_x_offset", 0)) * attr("in_accel_x_scale", attr("in_accel_scale", 1))}
fails = []
lines = [json.loads(l) for l in open(f"{session}/imu.jsonl")]
stamps = [json.loads(l) for l in open(f"{session}/imu.timestamps.jsonl")]
info = json.load(open(f"{session}/fieldcap.json"))["streams"][0]
iio = info["iio"]
missing = iio["timeline_gaps"]["samples_missing"]
times = [l["capture_ns"] for l in lines]
span = round((times[-1] - times[0]) / 1e6) + 1
print(f"{len(lines)} samples, {iio['timeline_gaps']['events']} gaps missing {missing}; timeline {span} periods; "
      f"time source: {iio['time_source']}; rate {iio['granted_rate']} Hz")
if iio["granted_rate"] != 1000: fails.append(f"granted rate {iio['granted_rate']}")
if "monotonic_raw" not in iio["time_source"]: fails.append(f"time source {iio['time_source']}")
if not 5400 <= span <= 6300: fails.append(f"the timeline spans {span} ms, not about 6 s")
# Every loss is reported: written + missing covers the timeline. And no more: the emulated
# hrtimer's samples come late, then bunched (the dummy stamps in its threaded handler), which is
# no loss. On a quiet host written + missing is the timeline exactly; with the host's two cores
# overloaded (the hrtimer then loses half its ticks in the kernel, and samples come up to a period
# late at every phase), 18 too many in 10,052 were seen: 1% is the bound held here, where the
# per-interval count of before was 5.8% over in CI's busy guest (6199 + 4336 for 9960).
accounted = len(lines) + missing
if accounted < 0.99 * span: fails.append(f"{len(lines)} written + {missing} missing does not account for {span} periods")
if accounted > 1.01 * span: fails.append(f"{len(lines)} written + {missing} missing is more than the {span} periods the timeline has")
# The kernel's misses are the host's load; fieldcap's own ring must drop nothing.
if info.get("drops", {}).get("count", 0): fails.append(f"fieldcap dropped {info['drops']['count']} samples")
if [l["capture_ns"] for l in stamps] != times or [l["frame_number"] for l in stamps] != list(range(len(lines))):
    fails.append("the timestamps file and the sensor file disagree")
if any(b <= a for a, b in zip(times, times[1:])): fails.append("capture_ns is not strictly increasing")
if times[0] < t0 or times[-1] > t1: fails.append(f"capture_ns {times[0]}..{times[-1]} outside the RAW window {t0}..{t1}")
for name, value in want.items():
    bad = [l["channels"][name] for l in lines if abs(l["channels"][name] - value) > 1e-9 * max(1, abs(value))]
    if bad: fails.append(f"{name}: {len(bad)} samples differ from {value}, e.g. {bad[0]}")
print("decoded:", {k: lines[0]["channels"][k] for k in want}, "expected:", want)
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY

# --- realtime kept, stepped an hour forward mid-capture ------------------------------------
echo realtime > "$D/current_timestamp_clock"
session=$FIELDCAP_TEST_TMP/imu-step
t0=$(raw_now)
"$fieldcap" --imu "$dev,rate=200,trigger=$trig,channels=accel_x,clock=keep,id=imu" --duration 6s --out "$session" -q &
recorder=$!
for _ in $(seq 100); do [ -s "$session/imu.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1
stepped=$(raw_now)
date -s "@$(( $(date +%s) + 3600 ))" >/dev/null
wait "$recorder"
date -s "@$(( $(date +%s) - 3600 ))" >/dev/null
t1=$(raw_now)
"$fieldcap" validate -q "$session"
/usr/bin/python3 - "$session" "$t0" "$t1" "$stepped" <<'PY'
import json, sys
session, t0, t1, stepped = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
times = [json.loads(l)["capture_ns"] for l in open(f"{session}/imu.timestamps.jsonl")]
iio = json.load(open(f"{session}/fieldcap.json"))["streams"][0]["iio"]
gaps = [(b - a) / 1e6 for a, b in zip(times, times[1:])]
widest = max(range(len(gaps)), key=lambda i: gaps[i])
print(f"{len(times)} samples; time source: {iio['time_source']}; clock steps seen: {iio['clock_steps']}; "
      f"largest interval {max(gaps):.2f} ms ({(times[widest] - stepped) / 1e9:+.2f} s from the step), "
      f"smallest {min(gaps):.3f} ms")
fails = []
if "realtime" not in iio["time_source"]: fails.append(f"time source {iio['time_source']}")
if iio["clock_steps"] < 1: fails.append("the step of CLOCK_REALTIME was not seen")
if min(gaps) <= 0: fails.append("capture_ns goes backwards")
# A step leaking into capture_ns moves it by the hour; under QEMU's emulation the hrtimer alone
# can stall for a tenth of a second (and then fire its late ticks back to back).
if max(gaps) > 1000: fails.append(f"a {max(gaps):.1f} ms jump in capture_ns")
if times[0] < t0 or times[-1] > t1: fails.append(f"capture_ns outside the RAW window of the capture")
if len(times) < 600: fails.append(f"only {len(times)} samples in 6 s at 200 Hz")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
echo monotonic_raw > "$D/current_timestamp_clock"; echo realtime > "$D/current_timestamp_clock"

# --- realtime kept, its rate stepped (chrony's maximum slew, 83,333 ppm) for 1.5 s ----------
# Samples stamped while the rate changed wait for the next read's clock pair: none may be lost,
# repeated or put out of order, and their bounds must stay those of a mapping, not of a guess.
echo realtime > "$D/current_timestamp_clock"
session=$FIELDCAP_TEST_TMP/imu-rate-step
"$fieldcap" --imu "$dev,rate=200,trigger=$trig,channels=accel_x,clock=keep,id=imu" --duration 6s --out "$session" -q &
recorder=$!
for _ in $(seq 100); do [ -s "$session/imu.timestamps.jsonl" ] && break; sleep 0.1; done
sleep 1.5
busybox adjtimex -t 10833 >/dev/null
sleep 1.5
busybox adjtimex -t 10000 >/dev/null
wait "$recorder"
"$fieldcap" validate -q "$session"
/usr/bin/python3 - "$session" <<'PY'
import json, sys
session = sys.argv[1]
stamps = [json.loads(l) for l in open(f"{session}/imu.timestamps.jsonl")]
times = [s["capture_ns"] for s in stamps]
iio = json.load(open(f"{session}/fieldcap.json"))["streams"][0]["iio"]
mapping = iio["clock_mapping"]
gaps = [(b - a) / 1e6 for a, b in zip(times, times[1:])]
missing = iio["timeline_gaps"]["samples_missing"]
span = round((times[-1] - times[0]) / 5e6) + 1
print(f"{len(times)} samples + {missing} missing over {span} periods; rate changes seen: {mapping['rate_changes']}; "
      f"worst uncertainty {mapping['worst_uncertainty']['ns']} ns at {mapping['worst_uncertainty']['seconds_after_start']:.2f} s; "
      f"intervals {min(gaps):.3f}..{max(gaps):.2f} ms")
fails = []
if mapping["rate_changes"] < 1: fails.append("the rate step of CLOCK_REALTIME was not seen")
if min(gaps) <= 0: fails.append("capture_ns is not strictly increasing")
if iio["non_increasing_times"]: fails.append(f"{iio['non_increasing_times']} samples came out of order")
# The hrtimer runs on CLOCK_MONOTONIC, 7.7 % faster against RAW while stepped: allow for that
# and the emulated timer's jitter, but not for a sample mapped a period off.
if not 0.9 * span <= len(times) + missing <= 1.1 * span: fails.append(f"{len(times)} + {missing} missing do not cover {span} periods")
if max(s["uncertainty_ns"] for s in stamps) > 100_000: fails.append("a sample's bound grew past 100 µs")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
echo monotonic_raw > "$D/current_timestamp_clock"; echo realtime > "$D/current_timestamp_clock"

# --- no rate, no trigger: fieldcap's own hrtimer trigger ----------------------------------
session=$FIELDCAP_TEST_TMP/imu-auto
"$fieldcap" --imu "$dev,id=imu" --duration 2s --out "$session" -q
"$fieldcap" validate -q "$session"
used=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["streams"][0]["iio"]["trigger"])' "$session/fieldcap.json")
echo "made and used trigger $used; configfs now: $(ls /sys/kernel/config/iio/triggers/hrtimer/ | tr '\n' ' ')"
[ "$used" = "fieldcap-iio-device0" ] || { echo "FAIL: used trigger $used"; exit 1; }
[ ! -e "/sys/kernel/config/iio/triggers/hrtimer/$used" ] || { echo "FAIL: trigger $used left behind"; exit 1; }
[ "$(state)" = "$before" ] || { echo "FAIL: the device was not put back: $(state), was $before"; exit 1; }

# --- a trigger fired by a program: late ticks, bunched ticks, skipped ticks -----------------
# The sysfs trigger samples once per write to trigger_now. At 25 Hz, in every cycle of 8 ticks one
# is skipped (a real loss), one fires 0.7 of a period late and the next on time (bunched behind it:
# no loss). The kernel's own count of the samples it made is ftrace's count of iio_push_to_buffers:
# on a busy host two writes can land while the device's handler thread still runs, and the kernel
# then makes one sample of them. fieldcap must write every sample the kernel made, and count
# missing the skipped ticks between its first and last sample (exactly, when every write made a
# sample; else no fewer, and no more than the writes that made none besides).
modprobe iio-trig-sysfs
tracing=/sys/kernel/tracing
[ -e "$tracing/trace" ] || mount -t tracefs nodev "$tracing" || fail "cannot mount tracefs"
untrace() { echo nop > "$tracing/current_tracer"; echo > "$tracing/set_ftrace_filter"; echo > "$tracing/trace"; }
echo 7 > /sys/bus/iio/devices/iio_sysfs_trigger/add_trigger
trap 'untrace 2>/dev/null || true; busybox adjtimex -t 10000 >/dev/null 2>&1 || true; echo 7 > /sys/bus/iio/devices/iio_sysfs_trigger/remove_trigger 2>/dev/null || true' EXIT
sysfs_trigger=$(grep -l '^sysfstrig7$' /sys/bus/iio/devices/trigger*/name | xargs dirname)
session=$FIELDCAP_TEST_TMP/imu-fired
# The tracer is switched on before the recorder starts: under emulation, patching the kernel's text
# for it can take longer than a recorder waits for its first sample.
echo iio_push_to_buffers > "$tracing/set_ftrace_filter" || fail "iio_push_to_buffers cannot be traced"
echo function > "$tracing/current_tracer"
"$fieldcap" --imu "$dev,rate=25,trigger=sysfstrig7,channels=accel_x,id=imu,stall=20s" --out "$session" -q &
recorder=$!
for _ in $(seq 100); do [ "$(cat "$D/buffer/enable")" = 1 ] && break; sleep 0.05; done
sleep 0.3
echo > "$tracing/trace"
fired=$(/usr/bin/python3 - "$sysfs_trigger/trigger_now" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
period = 0.040
start = time.monotonic() + 0.05
fired = skipped = 0
for tick in range(64):
    phase = tick % 8
    if phase == 3:
        if 0 < tick < 63: skipped += 1
        continue
    target = start + tick * period + (0.7 * period if phase == 5 else 0)
    delay = target - time.monotonic()
    if delay > 0: time.sleep(delay)
    os.pwrite(fd, b"1", 0)
    fired += 1
print(fired, skipped)
PY
)
# Stopped once the last sample has been read (every 100 ms); its stall limit (20 s) outlasts a slow guest.
sleep 0.5
# Only the dummy makes IIO samples in the guest, so every push in the window is one of its.
made=$(grep -c ' iio_push_to_buffers' "$tracing/trace" || true)
made=${made:-0}
untrace
kill -INT "$recorder"
wait "$recorder"
"$fieldcap" validate -q "$session"
/usr/bin/python3 - "$session" $fired "$made" <<'PY'
import json, sys
session, fired, skipped, made = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
times = [json.loads(l)["capture_ns"] for l in open(f"{session}/imu.timestamps.jsonl")]
iio = json.load(open(f"{session}/fieldcap.json"))["streams"][0]["iio"]
missing = iio["timeline_gaps"]["samples_missing"]
print(f"fired {fired} ({skipped} ticks skipped), the kernel made {made}; fieldcap wrote {len(times)}, "
      f"counted {missing} missing in {iio['timeline_gaps']['events']} gaps")
fails = []
if made < 2: fails.append(f"ftrace counted {made} samples made: the count did not work")
if made > fired: fails.append(f"ftrace counted {made} samples made of {fired} writes: another device pushed")
if len(times) != made: fails.append(f"{len(times)} samples written, the kernel made {made}")
merged = fired - made
if merged == 0 and missing != skipped: fails.append(f"{missing} counted missing, {skipped} ticks were skipped")
if not skipped <= missing <= skipped + merged:
    fails.append(f"{missing} counted missing: {skipped} ticks were skipped and {merged} writes made no sample")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
echo "fieldcap_iio_dummy: every check passed"
