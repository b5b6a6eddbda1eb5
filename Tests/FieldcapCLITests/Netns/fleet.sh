#!/bin/bash
# Three rigs, one capture, over a real mosquitto (run under `unshare --net --mount --pid --fork
# --mount-proc`, so whatever it starts ends with it). Each rig is a `fieldcap serve` in a network
# namespace of its own, on a veth pair to a bridge where the broker listens (10.78.0.1:1883);
# synthetic sources.
#   1. A start whose instant has passed when it comes: every rig says missed, none records.
#   2. `fleet start`: three sessions of one capture id; each sync point's wall clock against the
#      shared instant is printed (the scheduling bound, measured).
#   2b. `fleet mark`: each rig marks the fleet's instant (its UTC within 1 ms of it); marks with a
#      control character, no label or an instant an hour ahead are refused by every rig.
#   3. rig3 killed mid-capture: shown offline (its will), the others record on.
#   4. The broker killed and started again mid-capture: the rigs reconnect, nothing is lost.
#   5. `fleet stop` ends the online rigs; every session validates (rig3's after `fieldcap recover`),
#      carries the capture id, and its IMU has every sample.
# Usage: fleet.sh FIELDCAP WORKDIR
set -euo pipefail
fieldcap=$1
work=$2
broker=mqtt://10.78.0.1:1883
pids=()
cleanup() {
	for pid in "${pids[@]}" ${mosquitto_pid:-}; do kill -9 "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

mount -t tmpfs tmpfs /run
ip link set lo up
ip link add br0 type bridge
ip addr add 10.78.0.1/24 dev br0
ip link set br0 up
for i in 1 2 3; do
	ip netns add "rig$i"
	ip link add "v$i" type veth peer name "e$i"
	ip link set "v$i" master br0 up
	ip link set "e$i" netns "rig$i"
	ip -n "rig$i" addr add "10.78.0.1$i/24" dev "e$i"
	ip -n "rig$i" link set "e$i" up
	ip -n "rig$i" link set lo up
done

start_broker() {
	printf 'listener 1883 10.78.0.1\nallow_anonymous true\npersistence false\n' >"$work/mosquitto.conf"
	mosquitto -c "$work/mosquitto.conf" >>"$work/mosquitto.log" 2>&1 &
	mosquitto_pid=$!
	for _ in $(seq 100); do
		(exec 3<>/dev/tcp/10.78.0.1/1883) 2>/dev/null && return 0
		sleep 0.05
	done
	echo "mosquitto did not start"; cat "$work/mosquitto.log"; return 1
}
start_broker

for i in 1 2 3; do
	ip netns exec "rig$i" "$fieldcap" serve --imu synthetic:200,id=imu --cam synthetic:160x120@15 --host-id "rig$i" \
		--listen 127.0.0.1:18090 --scmf off --no-announce --wall-clock none --root "$work/rig$i" \
		--mqtt "$broker" --fleet lab 2>"$work/serve$i.log" &
	pids+=($!)
done

fleet() { "$fieldcap" fleet "$@" --mqtt "$broker" --fleet lab; }
# Waits until `fleet status` has N lines matching PATTERN.
wait_status() { # pattern count
	for _ in $(seq 120); do
		[ "$(fleet status 2>/dev/null | grep -cE "$1" || true)" -ge "$2" ] && return 0
		sleep 0.5
	done
	fleet status
	return 1
}
wait_status '^rig[123] +online +idle' 3
fleet status

echo "== 1. a start that comes too late, from another MQTT client"
mosquitto_sub -h 10.78.0.1 -t 'fieldcap/fleet/lab/rigs/+/reply' -C 3 -W 20 >"$work/late.txt" &
sub=$!
sleep 0.5
mosquitto_pub -h 10.78.0.1 -t fieldcap/fleet/lab/command -q 1 \
	-m "{\"command\":\"start\",\"capture_id\":\"late-1\",\"at_wall_clock_ns\":$(($(date +%s%N) - 1000000000))}"
wait "$sub"
cat "$work/late.txt"
[ "$(grep -c '"result":"missed"' "$work/late.txt")" = 3 ]
for i in 1 2 3; do grep -q 'missed the start of capture late-1' "$work/serve$i.log"; done
[ -z "$(ls "$work/rig1" 2>/dev/null)" ]

echo "== 2. fleet start"
fleet start --capture-id lab-1 --in 2s 2>&1 | tee "$work/start.txt"
[ "$(grep -cE '^rig[123] +started' "$work/start.txt")" = 3 ]
at=$(sed -n 's/.*(at_wall_clock_ns \([0-9]*\)).*/\1/p' "$work/start.txt")
sessions=()
for i in 1 2 3; do sessions+=("$(ls -d "$work/rig$i"/rig$i-*)"); done
for session in "${sessions[@]}"; do
	# fieldcap.json has the sync point from the start (sync_point.json comes with the stop).
	wall=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['sync_point']['wall_clock_ns'])" \
		"$session/fieldcap.json")
	echo "sync point of $(basename "$session"): $(( (wall - at) / 1000 )) µs after the shared instant"
	# Taken by the rig's own clock at the instant: after it, and within the scheduling bound.
	[ "$wall" -ge "$at" ] && [ $((wall - at)) -lt 100000000 ]
done
wait_status '^rig[123] +online +recording +lab-1' 3

echo "== 2b. fleet mark: one instant on every rig; hostile marks refused, the rigs record on"
fleet mark near-miss --note "from the fleet" --before 1s --after 1s 2>&1 | tee "$work/mark.txt"
[ "$(grep -cE '^rig[123] +marked +m1 in rig[123]-' "$work/mark.txt")" = 3 ]
mark_at=$(sed -n 's/.*(at_wall_clock_ns \([0-9]*\);.*/\1/p' "$work/mark.txt")
for session in "${sessions[@]}"; do
	python3 - "$session" "$mark_at" <<'PY'
import json, sys
session, at = sys.argv[1], int(sys.argv[2])
marks = [json.loads(line) for line in open(f"{session}/events.ndjson")]
assert [m["label"] for m in marks] == ["near-miss"], marks
mark = marks[0]
assert mark["source"] == "fleet" and mark["note"] == "from the fleet", mark
# The rig took the fleet's instant through its own clocks: its UTC is the instant.
off = mark["wall_clock_ns"] - at
print(f"mark on {session.split('/')[-1]}: {off / 1000:+.1f} µs from the fleet's instant")
assert abs(off) < 1_000_000, off
PY
done
mosquitto_sub -h 10.78.0.1 -t 'fieldcap/fleet/lab/rigs/+/reply' -C 9 -W 20 >"$work/hostile-marks.txt" &
sub=$!
sleep 0.5
for payload in '{"command":"mark","capture_id":"bad-1","label":"bell\u0007"}' \
	'{"command":"mark","capture_id":"bad-2"}' \
	"{\"command\":\"mark\",\"capture_id\":\"bad-3\",\"label\":\"x\",\"at_wall_clock_ns\":$(($(date +%s%N) + 3600000000000))}"; do
	mosquitto_pub -h 10.78.0.1 -t fieldcap/fleet/lab/command -q 1 -m "$payload"
done
wait "$sub"
cat "$work/hostile-marks.txt"
[ "$(grep -c '"result":"failed"' "$work/hostile-marks.txt")" = 9 ]
grep -q 'control character U+0007' "$work/hostile-marks.txt"
grep -q 'needs a label' "$work/hostile-marks.txt"
grep -q 'in the future' "$work/hostile-marks.txt"
wait_status '^rig[123] +online +recording +lab-1' 3

echo "== 3. rig3 killed mid-capture"
kill -9 "${pids[2]}"
wait_status '^rig3 +offline' 1
sleep 2
fleet status | tee "$work/status3.txt"
[ "$(grep -cE '^rig[12] +online +recording +lab-1' "$work/status3.txt")" = 2 ]

echo "== 4. the broker restarted"
kill -9 "$mosquitto_pid"
wait "$mosquitto_pid" 2>/dev/null || true
sleep 2
start_broker
wait_status '^rig[12] +online +recording +lab-1' 2
for i in 1 2; do grep -q 'cannot reach mqtt://10.78.0.1:1883' "$work/serve$i.log"; done

echo "== 5. fleet stop"
fleet stop 2>&1 | tee "$work/stop.txt"
[ "$(grep -cE '^rig[12] +stopped' "$work/stop.txt")" = 2 ]
"$fieldcap" recover "${sessions[2]}" >/dev/null 2>&1
for session in "${sessions[@]}"; do
	"$fieldcap" validate "$session"
	python3 - "$session" <<'PY'
import json, sys
session = sys.argv[1]
sidecar = json.load(open(f"{session}/fieldcap.json"))
assert sidecar["capture_id"] == "lab-1", sidecar.get("capture_id")
lines = [json.loads(line) for line in open(f"{session}/imu.timestamps.jsonl")]
frames = [json.loads(line)["frame_number"] for line in open(f"{session}/imu.timestamps.jsonl")]
# Every sample from the first: numbered without a gap.
assert frames == list(range(frames[0], frames[0] + len(frames))), "a gap in the IMU's samples"
drops = [s["drops"]["count"] for s in sidecar["streams"] if "drops" in s]
assert all(d == 0 for d in drops), drops
print(f"{session.split('/')[-1]}: capture lab-1, {len(lines)} IMU samples without a gap, no drops")
PY
done
echo "fleet: every step as expected"
