# Sourced by the network-namespace tests (run under `unshare --net --mount --pid --fork
# --mount-proc`): the namespace's network (a veth pair, fc0 at 10.77.0.1), a private system bus
# and an avahi-daemon of the test's own, all ended with the namespace.

# The network, and /run as a tmpfs so the daemons' sockets and pid files are the test's.
netns_network() {
	mount -t tmpfs tmpfs /run
	mkdir -p /run/dbus /run/avahi-daemon
	ip link set lo up
	ip link add fc0 type veth peer name fc1
	ip link set fc0 up
	ip link set fc1 up
	ip addr add 10.77.0.1/24 dev fc0
}

# A system bus at /run/dbus/system_bus_socket (bus_pid), for avahi-daemon and its clients.
start_system_bus() { # work-directory
	cat > "$1/bus.conf" <<'CONF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
CONF
	dbus-daemon --config-file="$1/bus.conf" --nofork --nopidfile &
	bus_pid=$!
	for _ in $(seq 50); do [ -S /run/dbus/system_bus_socket ] && break; sleep 0.1; done
}

start_avahi() { # work-directory host-name
	cat > "$1/avahi.conf" <<CONF
[server]
host-name=$2
use-ipv4=yes
use-ipv6=no
allow-interfaces=fc0,fc1
enable-dbus=yes
[publish]
publish-addresses=yes
CONF
	avahi-daemon -f "$1/avahi.conf" --no-chroot --no-drop-root --no-rlimits -D
}

stop_daemons() {
	[ -f /run/avahi-daemon/pid ] && kill "$(cat /run/avahi-daemon/pid)" 2>/dev/null || true
	[ -n "${bus_pid:-}" ] && kill "$bus_pid" 2>/dev/null || true
}
