#!/bin/bash
# rig-timeout: 120
# rig-share: 20
# Marks from a GPIO line (#50), against gpio-sim (the rig builds it) during a vivid + IIO dummy
# recording in segments:
# - bad input: a line the chip does not have, a chip that does not exist, a line another program
#   holds: one clear line, exit 64, nothing recorded;
# - the line pulled up five times at instants the test brackets with CLOCK_MONOTONIC_RAW reads
#   around each write to gpio-sim's `pull` (the kernel stamps the edge inside that write): five
#   marks, each capture_ns within 1 ms of its bracket (the spread is printed), each with the
#   mapping's uncertainty, in recording.json and its segment's events.ndjson; the session validates.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
imu=${FIELDCAP_IIO_DEVICE:?}
trig=${FIELDCAP_IIO_TRIGGER:?}
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first"; exit 1; }
fail() { echo "FAIL: $*" >&2; exit 1; }

C=/sys/kernel/config/gpio-sim/marks
cleanup() {
	[ -d "$C" ] || return 0
	echo 0 >"$C/live" 2>/dev/null || true
	rmdir "$C/bank0/line3" "$C/bank0" "$C" 2>/dev/null || true
}
trap cleanup EXIT
mkdir "$C" "$C/bank0" "$C/bank0/line3"
echo 8 >"$C/bank0/num_lines"
echo mark-in >"$C/bank0/line3/name"
echo 1 >"$C/live"
chip=$(cat "$C/bank0/chip_name")
pull=/sys/devices/platform/$(cat "$C/dev_name")/$chip/sim_gpio3/pull
echo pull-down >"$pull"
echo "gpio-sim: $chip, line 3 named mark-in ($pull)"

devices=(--cam "$dev,size=320x180,fps=30,id=cam" --imu "$imu,rate=200,trigger=$trig,id=imu")
expect_refused() { # WANTED_TEXT MARK_GPIO [DEVICES...]
	local want=$1 line=$2 err status=0
	shift 2
	[ $# -gt 0 ] || set -- "${devices[@]}"
	err=$("$fieldcap" "$@" --mark-gpio "$line" --duration 1s --out "$FIELDCAP_TEST_TMP/never" 2>&1 >/dev/null) || status=$?
	[ "$status" = 64 ] || fail "--mark-gpio $line exited $status, wanted 64: $err"
	[ "$(wc -l <<<"$err")" = 1 ] || fail "--mark-gpio $line printed more than one line: $err"
	grep -qF -- "$want" <<<"$err" || fail "--mark-gpio $line: '$err' lacks '$want'"
	[ ! -e "$FIELDCAP_TEST_TMP/never" ] || fail "--mark-gpio $line left a session directory"
	echo "ok: --mark-gpio $line -> $err"
}
expect_refused "has no line '99'" "$chip:99"
expect_refused "has no line 'no-such-name'" "$chip:no-such-name"
expect_refused "no such GPIO chip" "gpiochip7:3"

root=$FIELDCAP_TEST_TMP/marks
"$fieldcap" "${devices[@]}" --mark-gpio "$chip:mark-in,label=button,before=1s,after=1s" \
	--segment 2s --duration 9s --root "$root" -q 2>"$FIELDCAP_TEST_TMP/record.err" &
recorder=$!
for _ in $(seq 600); do
	compgen -G "$root/*/recording.json" >/dev/null && break
	if ! kill -0 "$recorder" 2>/dev/null; then
		status=0
		wait "$recorder" || status=$?
		fail "the recording ended (exit $status) before it started: $(cat "$FIELDCAP_TEST_TMP/record.err")"
	fi
	sleep 0.05
done
compgen -G "$root/*/recording.json" >/dev/null || fail "the recording did not start within 30 s: $(cat "$FIELDCAP_TEST_TMP/record.err")"
# A second program cannot take the line while the recording holds it (a synthetic IMU: vivid and
# the IIO dummy are the recording's).
expect_refused "is in use by 'fieldcap'" "$chip:3" --imu synthetic:100
/usr/bin/python3 - "$pull" "$FIELDCAP_TEST_TMP/edges.json" <<'PY'
import json, sys, time
pull, out = sys.argv[1], sys.argv[2]
raw = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
edges = []
time.sleep(1.0)
for _ in range(5):
    with open(pull, "w") as f:
        before = raw(); f.write("pull-up"); f.flush(); after = raw()
    edges.append([before, after])
    time.sleep(0.3)
    with open(pull, "w") as f:
        f.write("pull-down")
    time.sleep(0.9)
json.dump(edges, open(out, "w"))
PY
wait "$recorder" || fail "the recording exited $?"
session=$(ls -d "$root"/*/)
"$fieldcap" validate "$session"
/usr/bin/python3 - "$session" "$FIELDCAP_TEST_TMP/edges.json" <<'PY'
import json, os, sys
session, edges = sys.argv[1].rstrip("/"), json.load(open(sys.argv[2]))
index = json.load(open(f"{session}/recording.json"))
marks = index.get("marks") or []
assert len(marks) == len(edges) == 5, f"{len(marks)} marks for {len(edges)} edges: {marks}"
spread = []
for mark, (before, after) in zip(marks, edges):
    assert mark["source"].endswith(":mark-in") and mark["source"].startswith("gpio:gpiochip"), mark
    assert mark["label"] == "button" and mark["before_seconds"] == 1 and mark["after_seconds"] == 1, mark
    ns = mark["capture_ns"]
    # Within the test's own reads around the write that made the edge, to 1 ms.
    assert before - 1_000_000 <= ns <= after + 1_000_000, f"{mark['id']}: {ns} not within 1 ms of [{before}, {after}]"
    assert mark.get("uncertainty_ns") is not None and mark["uncertainty_ns"] < 1_000_000, mark
    spread.append((ns - before, after - ns, mark["uncertainty_ns"]))
    # Its line in the segment it falls in.
    home = [s for s in index["segments"] if s["start_monotonic_raw_ns"] <= ns < s["end_monotonic_raw_ns"]]
    assert len(home) == 1, home
    lines = [json.loads(l) for l in open(f"{session}/{home[0]['directory']}/events.ndjson")]
    assert mark["id"] in [l["id"] for l in lines], (mark, lines)
for (after_before, before_after, uncertainty), mark in zip(spread, marks):
    print(f"{mark['id']}: {after_before / 1000:.0f} µs after the write began, {before_after / 1000:.0f} µs before it "
          f"returned; uncertainty {uncertainty / 1000:.1f} µs")
print(f"5 marks from 5 edges, each within its write's bracket ({max(a + b for a, b, _ in spread) / 1000:.0f} µs at most)")
PY
echo "fieldcap_mark_gpio: every step as expected"
