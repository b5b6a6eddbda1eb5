#!/bin/bash
# `fieldcap serve --server auto` finds a capture server through DNS-SD, with a real avahi-daemon
# in a network namespace of its own (run under `unshare --net --mount --pid --fork --mount-proc`,
# so whatever it starts ends with it). The capture server, a Python `websockets` server, is
# announced as the AllSpark app browses for it (_allspark._tcp) by avahi-publish; the rig
# connects to it, says its name (clientInfo), and its status lists the server it saw. Then the
# server speaks TLS, as AllSpark's does when its keys/ folder exists (self-signed): with
# --insecure, `auto` connects through wss://, which it tries before ws://, as the app does.
# Usage: capture_server_discovery.sh FIELDCAP WORKDIR
set -euo pipefail
fieldcap=$1
work=$2
source "$(dirname "${BASH_SOURCE[0]}")/avahi.sh"
netns_network
printf 'not-a-real-token-but-a-long-enough-one-0123456789abcdef0123456789\n' > "$work/token"
chmod 600 "$work/token"
cleanup() {
	kill "${serve_pid:-}" "${publish_pid:-}" "${server_pid:-}" 2>/dev/null || true
	stop_daemons
}
trap cleanup EXIT
start_system_bus "$work"
start_avahi "$work" capture-host

# The capture server: it writes the rig's first message to clientinfo.json and holds the line.
python3 - "$work/clientinfo.json" <<'PY' &
import asyncio, sys, websockets
async def rig(socket):
    with open(sys.argv[1] + ".part", "w") as out:
        out.write(await socket.recv())
    __import__("os").rename(sys.argv[1] + ".part", sys.argv[1])
    await socket.wait_closed()
async def main():
    async with websockets.serve(rig, "10.77.0.1", 18095):
        await asyncio.sleep(120)
asyncio.run(main())
PY
server_pid=$!
avahi-publish -s "allspark test" _allspark._tcp 18095 > "$work/publish.log" 2>&1 &
publish_pid=$!

"$fieldcap" serve --cam synthetic:160x120@10 --host-id rig07 --listen 10.77.0.1:18090 --scmf off --no-announce \
	--token-file "$work/token" --root "$work/sessions" --server auto --name "rig 07" 2> "$work/serve.log" &
serve_pid=$!
for _ in $(seq 100); do
	[ -f "$work/clientinfo.json" ] && break
	kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
	sleep 0.2
done
cat "$work/serve.log"
[ -f "$work/clientinfo.json" ] || { echo "the rig did not connect to the server DNS-SD shows"; exit 1; }
echo "clientInfo: $(cat "$work/clientinfo.json")"
python3 - "$work/clientinfo.json" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
assert info == {"type": "clientInfo", "clientName": "rig 07"}, info
PY
status=$(curl -sS --fail -H "Authorization: Bearer $(cat "$work/token")" http://10.77.0.1:18090/api/v1/status)
echo "status: $status"
python3 - "$status" <<'PY'
import json, sys
server = json.loads(sys.argv[1])["server"]
assert server["state"] == "connected", server
assert server["url"] == "ws://10.77.0.1:18095", server
assert server["seen"] == ["allspark test (ws://10.77.0.1:18095)"], server
PY
grep -q "connected to the capture server ws://10.77.0.1:18095 as rig 07" "$work/serve.log"
# SIGKILL: the test runner's children start with SIGTERM blocked.
kill -KILL "$serve_pid" "$publish_pid" "$server_pid"
wait "$serve_pid" "$publish_pid" "$server_pid" 2> /dev/null || true

# The same server in TLS, with a self-signed certificate.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
	-subj /CN=capture-host > /dev/null 2>&1
python3 - "$work/tls-clientinfo.json" "$work/cert.pem" "$work/key.pem" <<'PY' &
import asyncio, os, ssl, sys, websockets
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
async def rig(socket):
    with open(sys.argv[1] + ".part", "w") as out:
        out.write(await socket.recv())
    os.rename(sys.argv[1] + ".part", sys.argv[1])
    await socket.wait_closed()
async def main():
    async with websockets.serve(rig, "10.77.0.1", 18096, ssl=context):
        await asyncio.sleep(120)
asyncio.run(main())
PY
server_pid=$!
avahi-publish -s "allspark tls" _allspark._tcp 18096 > "$work/publish-tls.log" 2>&1 &
publish_pid=$!
"$fieldcap" serve --cam synthetic:160x120@10 --host-id rig07 --listen 10.77.0.1:18090 --scmf off --no-announce \
	--token-file "$work/token" --root "$work/sessions" --server auto --insecure --name "rig 07" \
	2> "$work/serve-tls.log" &
serve_pid=$!
for _ in $(seq 100); do
	[ -f "$work/tls-clientinfo.json" ] && break
	kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve-tls.log"; exit 1; }
	sleep 0.2
done
cat "$work/serve-tls.log"
[ -f "$work/tls-clientinfo.json" ] || { echo "the rig did not connect to the TLS server DNS-SD shows"; exit 1; }
status=$(curl -sS --fail -H "Authorization: Bearer $(cat "$work/token")" http://10.77.0.1:18090/api/v1/status)
echo "status: $status"
python3 - "$status" <<'PY'
import json, sys
server = json.loads(sys.argv[1])["server"]
assert server["state"] == "connected", server
assert server["url"] == "wss://10.77.0.1:18096", server
PY
grep -q "connected to the capture server wss://10.77.0.1:18096 as rig 07" "$work/serve-tls.log"
echo "capture server discovery: every step as expected"
