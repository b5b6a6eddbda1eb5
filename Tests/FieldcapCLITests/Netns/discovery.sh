#!/bin/bash
# DNS-SD discovery of fieldcap serve with a real avahi-daemon, in a network namespace of its own
# (run under `unshare --net --mount --pid --fork --mount-proc`, so whatever it starts ends with
# it): a veth pair is the rig's network, /run is a tmpfs so the daemons' sockets and pid files are
# the test's, not the host's.
#   1. No D-Bus at all: serve says once that it is not announced, and serves.
#   2. A system bus but no avahi-daemon: serve says once that avahi-daemon is not running; when the
#      daemon starts, the rig is announced, and avahi-browse finds it with its TXT records.
#   3. SIGTERM: the announcement is withdrawn.
# Usage: discovery.sh FIELDCAP WORKDIR
set -euo pipefail
fieldcap=$1
work=$2
source "$(dirname "${BASH_SOURCE[0]}")/avahi.sh"
netns_network
printf 'not-a-real-token-but-a-long-enough-one-0123456789abcdef0123456789\n' > "$work/token"
chmod 600 "$work/token"

serve() { # log file
	"$fieldcap" serve --cam synthetic:160x120@10 --host-id rig07 --listen 10.77.0.1:18090 --scmf off \
		--token-file "$work/token" --root "$work/sessions" 2>"$1" &
	serve_pid=$!
	for _ in $(seq 200); do
		grep -q '^serving ' "$1" && return 0
		kill -0 "$serve_pid" 2>/dev/null || { cat "$1"; return 1; }
		sleep 0.1
	done
	cat "$1"
	return 1
}
stop_serve() {
	kill -TERM "$serve_pid"
	wait "$serve_pid"
}
cleanup() {
	kill "${serve_pid:-}" 2>/dev/null || true
	stop_daemons
}
trap cleanup EXIT

echo "== 1. no D-Bus"
serve "$work/serve1.log"
curl -sS --fail http://10.77.0.1:18090/api/health >/dev/null
sleep 0.5
stop_serve
cat "$work/serve1.log"
[ "$(grep -c 'not announced on the network' "$work/serve1.log")" = 1 ]

echo "== 2. a system bus, avahi-daemon later"
start_system_bus "$work"
serve "$work/serve2.log"
sleep 1
grep 'avahi-daemon is not running' "$work/serve2.log"
start_avahi "$work" rig07-host
found=""
for _ in $(seq 60); do
	found=$(avahi-browse -r -t -p _fieldcap._tcp 2>/dev/null | grep '^=' | grep 'IPv4' | head -1 || true)
	[ -n "$found" ] && break
	sleep 0.5
done
echo "avahi-browse: $found"
cat "$work/serve2.log"
[ -n "$found" ]
[ "$(grep -c 'avahi-daemon is not running' "$work/serve2.log")" = 1 ]
grep -q "announced as 'fieldcap rig07' (_fieldcap._tcp)" "$work/serve2.log"
# =;IFACE;IPv4;NAME;TYPE;DOMAIN;HOST;ADDRESS;PORT;TXT
IFS=';' read -r _ _ _ name type _ _ address port txt <<<"$found"
[ "$name" = 'fieldcap\032rig07' ] && [ "$type" = _fieldcap._tcp ] && [ "$port" = 18090 ]
for record in '"host_id=rig07"' '"api=v1"' '"token=required"' '"path=/"'; do
	grep -qF "$record" <<<"$txt" || { echo "TXT lacks $record: $txt"; exit 1; }
done
# What was found answers.
curl -sS --fail "http://$address:$port/api/health"
echo

echo "== 3. SIGTERM withdraws it"
stop_serve
gone=""
for _ in $(seq 30); do
	# Read whole (grep -q would stop early, and avahi-browse's SIGPIPE would read as "gone").
	grep -q '^=' <<<"$(avahi-browse -r -t -p _fieldcap._tcp 2>/dev/null)" || { gone=yes; break; }
	sleep 0.5
done
[ -n "$gone" ]
echo "discovery: every step as expected"
