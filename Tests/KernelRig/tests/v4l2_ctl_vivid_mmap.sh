#!/bin/bash
# rig-timeout: 90
# rig-share: 10
# v4l2-ctl streams 30 mmap frames from vivid; every buffer must carry the
# ts-monotonic flag, and timestamps and sequence numbers must increase.
set -euo pipefail
dev=${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}
frames=30
out="$FIELDCAP_TEST_TMP/stream.txt"

# 30 fps instead of vivid's default 5 fps: the 30 frames take ~1 s, not 6 s
old_fps=$(v4l2-ctl -d "$dev" --get-parm | sed -n 's/.*Frames per second: *[0-9.]* (\([0-9]*\/[0-9]*\)).*/\1/p')
restore() { [ -n "$old_fps" ] && v4l2-ctl -d "$dev" --set-parm="$(( ${old_fps%/*} / ${old_fps#*/} ))" >/dev/null 2>&1 || true; }
trap restore EXIT
v4l2-ctl -d "$dev" --set-parm=30

# CLOCK_MONOTONIC around the capture, from /proc/uptime (CLOCK_BOOTTIME; the
# guest never suspends, so it equals CLOCK_MONOTONIC, with 10 ms resolution)
read -r up0 _ < /proc/uptime
timeout 60 v4l2-ctl -d "$dev" --stream-mmap --stream-count="$frames" --verbose >"$out" 2>&1
read -r up1 _ < /proc/uptime

awk -v want="$frames" -v up0="$up0" -v up1="$up1" '
	/^cap dqbuf:/ {
		n++
		seq = ""; ts = ""
		for (i = 1; i <= NF; i++) {
			if ($i == "seq:") seq = $(i + 1)
			if ($i == "ts:") ts = $(i + 1)
		}
		if (seq == "" || ts == "") { print "unparsable line: " $0; bad++; next }
		if ($0 !~ /\(ts-monotonic/) { print "frame " n ": no ts-monotonic flag: " $0; bad++ }
		if (n > 1 && ts + 0 <= last_ts + 0) { print "frame " n ": timestamp " ts " not after " last_ts; bad++ }
		if (n > 1 && seq + 0 <= last_seq + 0) { print "frame " n ": sequence " seq " not after " last_seq; bad++ }
		if (n == 1) first_ts = ts
		last_ts = ts; last_seq = seq
	}
	END {
		if (n != want) { print "expected " want " frames, got " n; bad++ }
		# timestamps are CLOCK_MONOTONIC: they must fall inside the capture window
		if (n > 0 && (first_ts < up0 - 1 || last_ts > up1 + 1)) {
			printf "timestamps %s..%s outside the capture window %s..%s s (CLOCK_MONOTONIC)\n", first_ts, last_ts, up0, up1; bad++
		}
		if (n > 1) printf "%d frames, ts %s..%s s, mean interval %.1f ms, window %s..%s s\n", n, first_ts, last_ts, (last_ts - first_ts) * 1000 / (n - 1), up0, up1
		exit (bad > 0)
	}' "$out" || { echo "--- v4l2-ctl output:"; cat "$out"; exit 1; }
