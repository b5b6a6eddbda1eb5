#!/bin/bash
# In-guest runner for `rig test`: runs Tests/KernelRig/tests/NAME.sh for each
# NAME given, one after the other in this one guest, each under its own time
# limit, and prints "PASS name (Xs)" or "FAIL name (...)" plus the failing
# test's output. Writes $FIELDCAP_RIG_RESULTS/NAME.status (pass|fail) and
# NAME.log; the host counts those and prints the "N passed, N failed" line.
set -u
tests=${FIELDCAP_RIG_TESTS:?}
results=${FIELDCAP_RIG_RESULTS:?}
default_limit=${FIELDCAP_RIG_DEFAULT_TEST_TIMEOUT:-120}

uptime_cs() { # centiseconds since boot, without forking
	local up
	read -r up _ < /proc/uptime
	printf '%s\n' "${up/./}"
}

for name in "$@"; do
	f="$tests/$name.sh"
	log="$results/$name.log"
	limit=$(sed -n 's/^# *rig-timeout: *\([0-9][0-9]*\).*/\1/p' "$f" | head -1)
	limit=${limit:-$default_limit}
	# What the suite's time budget gives the test (scripts/test: 40 minutes in all): over it is
	# a warning, not a failure, so whoever makes a test longer sees it.
	share=$(sed -n 's/^# *rig-share: *\([0-9][0-9]*\).*/\1/p' "$f" | head -1)
	export FIELDCAP_TEST_NAME="$name"
	export FIELDCAP_TEST_TMP="$results/$name.tmp"
	mkdir -p "$FIELDCAP_TEST_TMP"
	t0=$(uptime_cs)
	cd "${FIELDCAP_REPO:-/}" || exit 125
	timeout -k 5 "$limit" /bin/bash "$f" > "$log" 2>&1 < /dev/null
	rc=$?
	t1=$(uptime_cs)
	dt=$(( t1 - t0 ))
	secs="$(( dt / 100 )).$(( dt % 100 / 10 ))s"
	if [ -n "$share" ] && [ "$(( dt / 100 ))" -ge "$share" ]; then
		echo "WARN $name took $secs, over its share of ${share}s (# rig-share): make it shorter, or say why in its header"
	fi
	if [ "$rc" = 0 ]; then
		echo pass > "$results/$name.status"
		echo "PASS $name ($secs)"
		[ -n "${FIELDCAP_RIG_VERBOSE:-}" ] && sed 's/^/    /' "$log"
	else
		echo fail > "$results/$name.status"
		why="exit $rc"
		[ "$rc" = 124 ] || [ "$rc" = 137 ] && why="time limit of ${limit}s hit"
		echo "FAIL $name ($secs, $why)"
		# Its first FAIL lines first: a log cut to its head (CI's summary) still says what failed.
		grep -m 5 -E '^[[:space:]]*FAIL' "$log" | sed 's/^[[:space:]]*/    first: /'
		sed 's/^/    /' "$log" | tail -60
	fi
done
exit 0
