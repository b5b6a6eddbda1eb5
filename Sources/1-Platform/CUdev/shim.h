// systemd's libudev (Debian: libudev-dev): a netlink monitor of the devices that come and go,
// from udevd once its rules have run, or straight from the kernel on a rig without udevd.
#include <libudev.h>
