#!/usr/bin/env bash
# Schemathesis (property-based API testing, from PyPI: a client nobody here wrote) against a real
# `fieldcap serve` on synthetic sources, over the repository's openapi.yaml. It proves that:
# - no request it can make gets a 5xx, and none hangs (each has --request-timeout; the whole run
#   a wall clock of its own);
# - every status code, content type, header and body the server sends is the one openapi.yaml
#   documents (not_a_server_error, status_code_conformance, content_type_conformance,
#   response_schema_conformance, response_headers_conformance), refusals included;
# - a method a path does not take gets 405 with an Allow header listing the ones openapi.yaml
#   documents there (unsupported_method, allow_header_conformance), not 404 "no such path";
# - what openapi.yaml says is a valid request is taken (positive_data_acceptance: a 2xx, or a
#   404/409 where the rig has no such session or is busy), so its patterns are not looser than
#   the server's checks;
# - after all that, the rig still records, stops on SIGTERM with exit 0, and every session it
#   left validates (`fieldcap validate`).
# It runs twice: on loopback without a token, and with --token-file (every request then carries
# `Authorization: Bearer`). Before each run a 1 s recording is made over the API, so the sessions
# endpoints have one to show, archive and delete, and extract gets its real wall-clock range (a
# config override: generated times would only ever find nothing). Schemathesis's phases are
# examples, coverage, fuzzing and stateful: the stateful phase follows openapi.yaml's links (the
# name a start or a stop answers into show, archive and delete) and those schemathesis infers
# (GET /api/v1/sessions's names into the same), so real sessions are shown, sent and deleted.
# Left out: GET /api/v1/preview/{camera}.mjpg, which streams until the client leaves (the MJPEG
# tests in ServeCommandTests cover it). GET /api/v1/events is called as a plain GET (no upgrade:
# schemathesis cannot speak WebSocket), so only its refusal is checked here.
#
# Why: the Swift tests call each endpoint with the requests someone thought of; this one sends
# the ones nobody did (odd names, bodies, times, headers), and found openapi.yaml disagreeing
# with the server where those tests had not looked (#42).
#
# The seed is fixed, so every run sends the same requests, and printed; SCHEMATHESIS_SEED=N runs
# (or replays) another, SCHEMATHESIS_EXAMPLES=N (default 25) sets the examples per operation.
# About 45 s on 2 cores (100 examples: 80 s). FIELDCAP_BIN picks the binary (default
# .build/release/fieldcap). Needs schemathesis 4 (scripts/install-deps).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

bin=${FIELDCAP_BIN:-$PWD/.build/release/fieldcap}
spec=$PWD/Sources/7-Frontends/FieldcapService/Web/openapi.yaml
seed=${SCHEMATHESIS_SEED:-20261127}
examples=${SCHEMATHESIS_EXAMPLES:-25}
[ -x "$bin" ] || { echo "schemathesis.sh: no fieldcap at $bin (build it, or set FIELDCAP_BIN)" >&2; exit 1; }
# Its `st` command, through the python3 that scripts/install-deps installed it for.
st=(python3 -c 'from schemathesis.cli import schemathesis; schemathesis(prog_name="st")')
"${st[@]}" --version >/dev/null 2>&1 || { echo "schemathesis.sh: no schemathesis: run scripts/install-deps" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/fieldcap-schemathesis.XXXXXX")
serve_pid=""
cleanup() {
	if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
		kill -TERM "$serve_pid" 2>/dev/null || true
		wait "$serve_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

fail() {
	echo "schemathesis.sh: FAIL: $*" >&2
	[ -s "$work/serve.log" ] && { echo "--- fieldcap serve's output:" >&2; tail -20 "$work/serve.log" >&2; }
	exit 1
}

# The API through curl, with the token when the run has one: prints the body, then the status
# on a line of its own.
api() { # method path [body]
	local auth=()
	[ -n "$token" ] && auth=(-H "Authorization: Bearer $token")
	curl -sS --max-time 15 -X "$1" "${auth[@]+"${auth[@]}"}" ${3:+-d "$3"} -w '\n%{http_code}' "$base$2"
}

# Reads one key of a JSON object on stdin.
json() { python3 -c 'import json, sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$1"; }

# Starts a recording of `seconds` over the API and waits until the rig is idle again; prints
# the session's name.
record() { # seconds
	local reply name state=""
	reply=$(api POST /api/v1/recording/start "{\"duration\":\"$1s\"}")
	[ "${reply##*$'\n'}" = 201 ] || fail "POST /api/v1/recording/start: ${reply//$'\n'/ }"
	name=$(json name <<<"${reply%$'\n'*}")
	for _ in $(seq 100); do
		reply=$(api GET /api/v1/status)
		state=$(json state <<<"${reply%$'\n'*}")
		[ "$state" = idle ] && break
		sleep 0.2
	done
	[ "$state" = idle ] || fail "the ${1}s recording $name was still '$state' 20 s later"
	echo "$name"
}

echo "schemathesis $("${st[@]}" --version | awk '{ print $NF }'), seed $seed (SCHEMATHESIS_SEED=$seed replays it), $examples examples per operation"

run() { # open|token
	local mode=$1 root="$work/$1/sessions" line name reply start_utc end_utc status=0
	mkdir -p "$root"
	token=""
	local serve_args=(serve --cam synthetic:320x240@15 --imu synthetic:100 --root "$root" --listen 127.0.0.1:0
		--scmf off --no-announce --wall-clock none)
	[ "$mode" = token ] && serve_args+=(--token-file "$work/api-token")
	"$bin" "${serve_args[@]}" >"$work/serve.log" 2>&1 &
	serve_pid=$!
	for _ in $(seq 150); do
		line=$(grep -m1 -o 'on http://127\.0\.0\.1:[0-9]*' "$work/serve.log" || true)
		[ -n "$line" ] && break
		kill -0 "$serve_pid" 2>/dev/null || fail "fieldcap serve ($mode) exited before it listened"
		sleep 0.1
	done
	[ -n "$line" ] || fail "fieldcap serve ($mode) did not listen within 15 s"
	base=${line#on }
	[ "$mode" = token ] && token=$(cat "$work/api-token")
	echo "== fieldcap serve, $mode: $base"

	# The rig serves the openapi.yaml it was built with; schemathesis reads the tree's.
	curl -sS --max-time 10 -o "$work/served.yaml" "$base/api/v1/openapi.yaml"
	cmp -s "$work/served.yaml" "$spec" ||
		echo "note: the binary serves an older openapi.yaml than $spec (rebuild it); the tree's is tested"

	name=$(record 1)
	"$bin" validate "$root/$name" >"$work/validate.log" 2>&1 || { cat "$work/validate.log" >&2; fail "$name does not validate"; }
	reply=$(api GET "/api/v1/sessions/$name")
	start_utc=$(json start_utc <<<"${reply%$'\n'*}")
	end_utc=$(json end_utc <<<"${reply%$'\n'*}")
	[ -n "$start_utc" ] && [ -n "$end_utc" ] || fail "GET /api/v1/sessions/$name has no start_utc/end_utc: ${reply//$'\n'/ }"
	echo "recorded $name ($start_utc to $end_utc)"
	# The checks (here, not on the command line, so one operation can leave one out):
	# positive_data_acceptance is off for the start, whose rules across fields (keep and
	# max_storage need a segment, a segment holds a frame, a budget a segment) are more than
	# OpenAPI 3.0 can say, so a body valid by the schema may rightly get a 400; and off in the
	# stateful phase, which does not heed an operation's own checks; and off for the events and
	# the live samples, whose valid requests are WebSocket upgrades schemathesis cannot make:
	# their plain GET is rightly a 426 (a refused one a 401 or 403, which the check allows; a
	# stream the rig lacks a 404). Extract's from and to are
	# this run's recording (before the other, as the server wants and the schema cannot say).
	cat >"$work/schemathesis.toml" <<-EOF
		[checks]
		enabled = false
		not_a_server_error.enabled = true
		status_code_conformance.enabled = true
		content_type_conformance.enabled = true
		response_schema_conformance.enabled = true
		response_headers_conformance.enabled = true
		positive_data_acceptance.enabled = true
		unsupported_method.enabled = true
		allow_header_conformance.enabled = true

		[phases.stateful.checks]
		positive_data_acceptance.enabled = false

		[[operations]]
		include-path = "/api/v1/extract"
		parameters = { from = "$start_utc", to = "$end_utc" }

		[[operations]]
		include-path = "/api/v1/recording/start"
		checks.positive_data_acceptance.enabled = false

		[[operations]]
		include-path = "/api/v1/events"
		checks.positive_data_acceptance.enabled = false

		[[operations]]
		include-path = "/api/v1/live/{stream}"
		checks.positive_data_acceptance.enabled = false
	EOF

	local auth=()
	[ -n "$token" ] && auth=(-H "Authorization: Bearer $token")
	# A run that hangs past its own per-request timeouts is a failure too (timeout's 124). One
	# worker: schemathesis's threads parse lambdas' source with ast at once, which Python 3.11
	# (Debian 12's) can fail with "AST constructor recursion depth mismatch".
	(cd "$work" && timeout --kill-after=5 120 "${st[@]}" --config-file "$work/schemathesis.toml" --no-color run "$spec" \
		--url "$base" "${auth[@]+"${auth[@]}"}" \
		--exclude-path-regex '\.mjpg$' \
		--phases examples,coverage,fuzzing,stateful \
		--max-examples "$examples" --seed "$seed" --request-timeout 10 --workers 1 \
		--generation-database none --warnings off) >"$work/st.log" 2>&1 || status=$?
	if [ "$status" != 0 ]; then
		cat "$work/st.log"
		[ "$status" = 124 ] && fail "schemathesis ($mode) did not finish within 120 s: a request hung"
		fail "schemathesis ($mode) found the server and openapi.yaml disagreeing (exit $status; seed $seed)"
	fi
	grep -E '^ +[0-9]+ generated|passed|Scenarios|API Links' "$work/st.log" | sed 's/^ */  /' || true

	# Fuzzed, it still records; a recording the fuzzing left running is stopped.
	reply=$(api POST /api/v1/recording/stop)
	case "${reply##*$'\n'}" in 200 | 409) ;; *) fail "POST /api/v1/recording/stop after the run: ${reply//$'\n'/ }" ;; esac
	name=$(record 1)
	echo "recorded $name after the run"

	kill -TERM "$serve_pid"
	status=0
	wait "$serve_pid" || status=$?
	serve_pid=""
	[ "$status" = 0 ] || fail "fieldcap serve ($mode) exited $status on SIGTERM"
	local left=0 session
	for session in "$root"/* "$root"/.[!.]*; do
		[ -e "$session" ] || continue
		case "${session##*/}" in .*) fail "left in the root: ${session##*/} (a scratch directory)" ;; esac
		"$bin" validate "$session" >"$work/validate.log" 2>&1 ||
			{ cat "$work/validate.log" >&2; fail "${session##*/} (in the $mode run's root) does not validate"; }
		left=$((left + 1))
	done
	echo "serve exited 0 on SIGTERM; the $left sessions left in its root validate"
}

token=""
base=""
started=$(date +%s)
run open
run token
echo "schemathesis.sh: passed in $(($(date +%s) - started)) s (seed $seed)"
