#!/bin/bash
# rig-timeout: 240
# rig-share: 25
# What fieldcap says at start and at the end (issue 19), on vivid and the IIO dummy:
# - no options (vivid's default end-of-frame timestamps; the dummy with no trigger attached): a
#   start line per stream, ids and devices in columns: vivid's driver, card and bus, 640x480 YUYV
#   at 30 fps as fieldcap's default, its kernel timestamps; the dummy's channels with units, its
#   rate as the default of the trigger fieldcap made, that trigger, the timestamp clock. At the
#   end a warning that every frame was stamped at dequeue, how many and why, with the hint to
#   use; the counts agree with fieldcap.json;
# - the hint followed (ctrl.timestamp_source=1: start of exposure), with --json: the start line
#   carries the same as the terminal's, every frame has the kernel's time and no such warning
#   comes; the stop line's counts and warnings agree with fieldcap.json and the stderr summary.
# In both, a rate warning comes exactly when the stream's rate from its first record to its last
# (read back from its timestamps file) is below 80% or above 120% of its nominal rate.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
D=${FIELDCAP_IIO_DEVICE_SYSFS:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
v4l2-ctl -d "$dev" -c timestamp_source=0
# The first case is a new user's dummy: no trigger attached. Earlier tests in the same boot may
# have left one (attaching it is what a rig does); it is detached here and put back at the end.
# The same for its timestamp clock: the kernel's default, realtime, which fieldcap sets to
# monotonic_raw and puts back.
# A recorder an earlier test killed may have left the buffer enabled, which keeps both busy.
echo 0 > "$D/buffer/enable"
attached=$(cat "$D/trigger/current_trigger")
clock=$(cat "$D/current_timestamp_clock")
echo > "$D/trigger/current_trigger"
echo realtime > "$D/current_timestamp_clock"
trap 'v4l2-ctl -d "$dev" -c timestamp_source=0 >/dev/null 2>&1 || true; echo "$attached" > "$D/trigger/current_trigger" || true; echo "$clock" > "$D/current_timestamp_clock" || true' EXIT

# --- no options --------------------------------------------------------------------------
# Sessions on the guest's scratch disk, as a rig records: 640x480 at 30 fps is more than the 9p
# share carries under TCG (see fieldcap_v4l2_vivid).
plain=${FIELDCAP_DISK_DIR:-/tmp}/fieldcap_start_lines-plain
rm -rf "$plain"
"$fieldcap" --cam "$dev" --imu "$imu" --duration 4s --out "$plain" 2>"$FIELDCAP_TEST_TMP/plain.stderr"
cat "$FIELDCAP_TEST_TMP/plain.stderr"
"$fieldcap" validate -q "$plain"

# --- the hint followed, --json --------------------------------------------------------------
soe=${FIELDCAP_DISK_DIR:-/tmp}/fieldcap_start_lines-soe
rm -rf "$soe"
"$fieldcap" --cam "$dev,ctrl.timestamp_source=1" --imu "$imu,rate=200,trigger=$trig,channels=accel_x" --duration 4s \
	--out "$soe" --json >"$FIELDCAP_TEST_TMP/soe.jsonl" 2>"$FIELDCAP_TEST_TMP/soe.stderr"
head -1 "$FIELDCAP_TEST_TMP/soe.jsonl"
tail -1 "$FIELDCAP_TEST_TMP/soe.jsonl"
cat "$FIELDCAP_TEST_TMP/soe.stderr"
"$fieldcap" validate -q "$soe"

/usr/bin/python3 - "$plain" "$soe" "$FIELDCAP_TEST_TMP" "$dev" "$imu" "$trig" <<'PY'
import json, re, sys
plain, soe, tmp, dev, imu, trig = sys.argv[1:]
fails = []
def check(ok, what):
    if not ok: fails.append(what)

def rate_check(session, warnings_by_id, elapsed):
    """A rate warning exactly when the rate over the stream's span is outside 80-120% of nominal."""
    info = json.load(open(f"{session}/fieldcap.json"))
    for stream in info["streams"]:
        sid, nominal = stream["id"], stream["nominal_rate"]
        times = [json.loads(l)["capture_ns"] for l in open(f"{session}/{sid}.timestamps.jsonl")]
        span = (times[-1] - times[0]) / 1e9 if len(times) > 1 else 0
        measured = (len(times) - 1) / span if span >= 1 else len(times) / elapsed
        ratio = measured / nominal
        said = [w for w in warnings_by_id.get(sid, []) if w.startswith("recorded at ")]
        print(f"{session.split('/')[-1]} {sid}: {len(times)} records, {measured:.1f}/s over {span:.2f} s, "
              f"{ratio:.0%} of {nominal:g}; rate warning: {said}")
        if abs(ratio - 0.8) < 0.01 or abs(ratio - 1.2) < 0.01:
            continue  # on a bound: rounding may fall either way
        far = ratio < 0.8 or ratio > 1.2
        check(bool(said) == far, f"{sid}: {ratio:.0%} of its nominal rate, rate warning {said}")
        if said:
            check(f"{ratio * 100:.0f}% of its nominal {nominal:g}" in said[0], f"{sid}: '{said[0]}' does not say {ratio:.0%}")

def warning_lines(stderr):
    out = {}
    for line in stderr.splitlines():
        m = re.match(r"warning: (\S+): (.*)$", line)
        if m: out.setdefault(m.group(1), []).append(m.group(2))
    return out

# --- no options: the start lines --------------------------------------------------------------
stderr = open(f"{tmp}/plain.stderr").read()
lines = stderr.splitlines()
cam = next((l for l in lines if l.startswith("  cam0  ")), "")
imu_line = next((l for l in lines if l.startswith("  imu0  ")), "")
print("cam0 start line:", cam)
print("imu0 start line:", imu_line)
check(lines[0] == f"recording 2 streams into {plain}", f"first line '{lines[0]}'")
# ids and devices in columns: both lines put their summary at the same place.
width = max(len(dev), len(imu))
check(cam.startswith(f"  cam0  {dev.ljust(width)}  vivid (vivid, platform:vivid-"), f"cam0 line '{cam}'")
check(imu_line.startswith(f"  imu0  {imu.ljust(width)}  {imu} (iio:device"), f"imu0 line '{imu_line}'")
for want in ["YUYV 640x480, 30 fps (fieldcap's default; fps= to change)", "kernel timestamps: CLOCK_MONOTONIC, end of frame"]:
    check(want in cam, f"the cam0 start line lacks '{want}'")
# The dummy's only IMU channel is accel_x (its voltages are not IMU kinds); fieldcap makes an
# hrtimer trigger, whose default rate is 100 Hz, and sets the timestamp clock to monotonic_raw.
for want in ["accel_x (m/s²) (its accel, anglvel, magn and temp channels; channels= to choose)",
             "100 Hz (the default of the trigger fieldcap made; rate= to change)",
             "trigger fieldcap-iio-device0 (made by fieldcap: none was attached; removed after)",
             "timestamps: the kernel's timestamp channel, in monotonic_raw (set by fieldcap, put back after)"]:
    check(want in imu_line, f"the imu0 start line lacks '{want}'")
check("voltage0" not in imu_line, "the imu0 start line names a voltage channel")

# --- no options: the end -------------------------------------------------------------------
info = json.load(open(f"{plain}/fieldcap.json"))
streams = {s["id"]: s for s in info["streams"]}
v4l2 = streams["cam0"]["v4l2"]
warned = warning_lines(stderr)
print("warnings:", json.dumps(warned, ensure_ascii=False))
fallback, written = v4l2["frames_stamped_at_dequeue"], streams["cam0"]["written"]
# vivid's end-of-frame time lies ahead of a prompt dequeue; a frame dequeued more than a period
# late (the guest preempted) has it in the past, where it is a usable kernel time.
check(written > 0 and fallback >= 0.9 * written, f"{fallback} of {written} frames stamped at dequeue, wanted nearly all (vivid's end-of-frame times)")
dequeue = [w for w in warned.get("cam0", []) if "stamped at dequeue" in w]
check(len(dequeue) == 1, f"cam0's warnings {warned.get('cam0')} do not say once that frames were stamped at dequeue")
check(any(w.startswith(f"{fallback} of ") for w in dequeue), f"the dequeue warning {dequeue} does not give the {fallback} frames the sidecar counts")
if dequeue:
    check(re.match(rf"{fallback} of [0-9]+ frames were stamped at dequeue, not with the kernel's time \({fallback}: ", dequeue[0]),
          f"'{dequeue[0]}' does not give the count {fallback}")
    check("the kernel time lay after the dequeue" in dequeue[0], f"'{dequeue[0]}' does not give the reason")
    check("ctrl.timestamp_source=1" in dequeue[0], f"'{dequeue[0]}' does not give the hint")
gaps = v4l2["kernel_sequence_gaps"]["count"]
check(any("sequence gaps" in w for w in warned.get("cam0", [])) == (gaps > 0), f"{gaps} kernel sequence gaps, warnings {warned.get('cam0')}")
missing = streams["imu0"]["iio"]["timeline_gaps"]["samples_missing"]
check(any("missing from the timeline" in w for w in warned.get("imu0", [])) == (missing > 0),
      f"{missing} samples missing from the timeline, warnings {warned.get('imu0')}")
elapsed = float(re.search(r"^recorded ([0-9.]+) s", stderr, re.M).group(1))
rate_check(plain, warned, elapsed)

# --- the hint followed, --json ----------------------------------------------------------------
objects = [json.loads(l) for l in open(f"{tmp}/soe.jsonl")]
events = [o.get("event") for o in objects]
check(len(objects) >= 3 and events[0] == "start" and events[-1] == "stop" and set(events[1:-1]) == {"progress"},
      f"--json events {events}")
start, stop = objects[0], objects[-1]
by_id = {s["id"]: s for s in start["streams"]}
check(start["directory"] == soe, f"start directory {start['directory']}")
cam, imu0 = by_id["cam0"], by_id["imu0"]
g = cam["granted"]
check(cam["device"] == dev and cam["kind"] == "video", f"cam0 {cam['device']} {cam['kind']}")
check((g["driver"], g["format"], g["width"], g["height"], g["rate"], g["rate_source"]) == ("vivid", "YUYV", 640, 480, 30, "standard"),
      f"cam0 granted {g}")
check(g["kernel_timestamps"] == {"clock": "CLOCK_MONOTONIC", "source": "start of exposure"}, f"cam0 kernel timestamps {g['kernel_timestamps']}")
check(g["controls"].get("timestamp_source", {}).get("granted") == 1, f"cam0 controls {g['controls']}")
check("start of exposure" in cam["summary"] and "30 fps (fieldcap's default" in cam["summary"], f"cam0 summary {cam['summary']}")
check(cam["time_source"] == "kernel, mapped", f"cam0 time source {cam['time_source']}")
g = imu0["granted"]
check(imu0["device"] == imu and imu0["kind"] == "sensor", f"imu0 {imu0['device']} {imu0['kind']}")
check(g["channels"] == [{"name": "accel_x", "unit": "m/s²"}] and g["channels_source"] == "asked", f"imu0 channels {g['channels']}")
check((g["rate"], g["rate_source"], g["trigger"], g["trigger_source"], g["trigger_made"]) == (200, "asked", trig, "asked", False),
      f"imu0 granted {g}")
check((g["timestamp_clock"], g["time_source"]) == ("monotonic_raw", "kernel, RAW"), f"imu0 clock {g}")
check(imu0["time_source"] == "kernel, RAW", f"imu0 time source {imu0['time_source']}")
check(f"trigger {trig} (asked)" in imu0["summary"] and "200 Hz (asked)" in imu0["summary"], f"imu0 summary {imu0['summary']}")
# The same start lines as a terminal's, had it been one: the summary is what the header prints.
for sid, s in by_id.items():
    check(s["summary"] and "\n" not in s["summary"], f"{sid}: summary not one line")

info = json.load(open(f"{soe}/fieldcap.json"))
streams = {s["id"]: s for s in info["streams"]}
check(streams["cam0"]["v4l2"]["frames_stamped_at_dequeue"] == 0,
      f"{streams['cam0']['v4l2']['frames_stamped_at_dequeue']} frames stamped at dequeue with start-of-exposure timestamps")
check(stop["reason"] == "duration", f"stop reason {stop['reason']}")
final = {s["id"]: s for s in stop["streams"]}
stderr = open(f"{tmp}/soe.stderr").read()
warned = warning_lines(stderr)
for sid, s in final.items():
    check(s["written"] == streams[sid]["written"] and s["dropped"] == streams[sid]["drops"]["count"],
          f"{sid}: the stop line's counts {s['written']}/{s['dropped']} differ from fieldcap.json")
    check(s["warnings"] == warned.get(sid, []), f"{sid}: stop line warnings {s['warnings']}, stderr {warned.get(sid, [])}")
check(not any("stamped at dequeue" in w for w in final["cam0"]["warnings"]), f"cam0 warnings {final['cam0']['warnings']}")
check(final["cam0"]["time_source"] == "kernel, mapped", f"cam0's final time source {final['cam0']['time_source']}")
rate_check(soe, {sid: s["warnings"] for sid, s in final.items()}, stop["elapsed_s"])

for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
