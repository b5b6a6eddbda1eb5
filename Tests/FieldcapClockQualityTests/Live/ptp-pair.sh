#!/bin/bash
# Two real ptp4l (linuxptp) with software time stamping on a veth pair, each end in a network
# namespace of its own, for the reader's live test: a master and a slave-only clock, with their
# management sockets at DIR/master.sock and DIR/slave.sock. It runs in a user namespace, where
# ptp4l's clock_adjtime fails (EPERM): the host's clock is never steered, and the servo still
# locks (the port reaches SLAVE). The PI constants make it lock within a few syncs. Runs until
# killed (SIGKILL ends the namespace's pid 1, and with it both ptp4l).
# Usage: ptp-pair.sh DIR    (DIR: an empty directory the caller owns)
set -euo pipefail
dir=$1
common='domainNumber 0
network_transport UDPv4
time_stamping software
logSyncInterval -2
logAnnounceInterval -1
logMinDelayReqInterval -2
announceReceiptTimeout 3
pi_proportional_const 0.7
pi_integral_const 0.3
summary_interval 0
kernel_leap 0'
printf '[global]\n%s\npriority1 10\nuds_address %s/master.sock\n' "$common" "$dir" >"$dir/master.cfg"
printf '[global]\n%s\npriority1 200\nslaveOnly 1\nuds_address %s/slave.sock\n' "$common" "$dir" >"$dir/slave.cfg"
cat >"$dir/inner.sh" <<INNER
set -e
mount -t tmpfs tmpfs /run
ip netns add ptpm
ip netns add ptps
ip link add vm type veth peer name vs
ip link set vm netns ptpm
ip link set vs netns ptps
ip -n ptpm addr add 10.99.0.1/24 dev vm; ip -n ptpm link set lo up; ip -n ptpm link set vm up
ip -n ptps addr add 10.99.0.2/24 dev vs; ip -n ptps link set lo up; ip -n ptps link set vs up
ip netns exec ptpm ptp4l -S -i vm -f $dir/master.cfg -m >$dir/master.log 2>&1 &
ip netns exec ptps ptp4l -S -i vs -f $dir/slave.cfg -m >$dir/slave.log 2>&1 &
wait
INNER
exec unshare --user --map-root-user --net --mount --pid --fork --kill-child bash "$dir/inner.sh"
