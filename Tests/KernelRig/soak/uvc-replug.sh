#!/bin/bash
# A soak outside CI: fieldcap records the rig's UVC gadget camera (lib/uvc-gadget.sh) and a
# synthetic IMU for DURATION while the camera is unplugged and plugged in again every 30 s
# (scripts/soak --replug-every), and reports memory, open file descriptors, CPU and each stream's
# times away and returns. From the host:
#
#   scripts/build-release
#   Tests/KernelRig/rig run --timeout 900 --share /tmp/soak -e FIELDCAP_REPO=$PWD \
#       -e SOAK_OUT=/tmp/soak/session -- bash Tests/KernelRig/soak/uvc-replug.sh 10m
#
# The report is SOAK_OUT/soak.json (on the shared folder, so it survives the guest).
set -euo pipefail
duration=${1:-10m}
repo=${FIELDCAP_REPO:?run through Tests/KernelRig/rig run -e FIELDCAP_REPO=...}
out=${SOAK_OUT:-/tmp/soak-session}
. "$repo/Tests/KernelRig/lib/uvc-gadget.sh"
uvc_gadget_modules 1
uvc_gadget_create fieldcap-soak fc-s-0001
trap 'set +e; uvc_gadget_remove fieldcap-soak' EXIT
cam=$(uvc_gadget_plug fieldcap-soak 0 /tmp/feeder.log)
gadget=". $repo/Tests/KernelRig/lib/uvc-gadget.sh;"
/usr/bin/python3 "$repo/scripts/soak" --duration "$duration" --binary "$repo/.build/release/fieldcap" --out "$out" \
	--interval 15 --replug-every 30s --unplug "$gadget uvc_gadget_unplug fieldcap-soak" \
	--plug "$gadget uvc_gadget_plug fieldcap-soak 0 /tmp/feeder.log" \
	-- --cam "$cam,size=320x240,fps=30,id=cam" --imu synthetic:200,id=imu
