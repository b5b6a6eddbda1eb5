#!/bin/bash
# rig-timeout: 240
# rig-share: 65
# `fieldcap check-sync` on frames a real V4L2 driver delivered (#47): vivid's S-Video loopback
# (one instance with a capture and an output node; input 2 connected to output 0, PAL, no OSD
# text) passes each frame written to its output through its capture node.
# The frames are a synthetic turning camera's, rendered first (at 360x288), each written a fixed
# time after its rendering (the one due at its instant: tools/vivid_loopback.py), while
# fieldcap records the capture node beside a synthetic gyroscope whose stamps are late by that
# time (delay=), so that it turns as the scene shows. Each frame carries its number in its pixels,
# so every captured frame's true lag (its capture_ns against the instant its scene shows) is
# known (it varies within a run by up to a frame period: a frame lands either side of vivid's
# output tick). Over the longest stretch in which vivid kept up (no frame lost, none held for
# several periods), when 2.5 s or more, check-sync must find an offset among its lags and within a
# quarter frame (10 ms) of their mean, not refuse; its peer method is printed beside it. On a host
# so busy that the emulated vivid never keeps up that long (seen beside a CPU hog: frames held for
# 300 ms, the scene rendered ahead with gaps), there is no one true offset: check-sync must refuse
# or give one among the lags, and the run says it could check only that. "Among the lags" allows
# the method's own error, 5 ms past the lowest or highest lag: check-sync estimates one offset
# for the stretch, and its error on this loopback is a few ms (−0.3 to −2.2 ms in quiet runs),
# while the lowest lag of a stretch can lie within that of the true offset (a fresh-clone run:
# +10.47 ms against lags of +11.4 to +52.0 ms, median +11.9). vivid is reloaded as the other
# tests have it afterwards.
set -euo pipefail
fieldcap=${FIELDCAP_BIN:?run through Tests/KernelRig/rig, which picks the build}
[ -x "$fieldcap" ] || { echo "no $fieldcap: build it on the host first (scripts/build-release, or swift build)"; exit 1; }
: "${FIELDCAP_VIDEO_DEVICE:?not in the kernel rig guest}"
tools=$FIELDCAP_REPO/Tests/KernelRig/tools
. "$FIELDCAP_REPO/Tests/KernelRig/lib/vivid-loopback.sh"
# The scene is rendered at a quarter of PAL's size (a synthetic render of 720x576 falls behind
# 25 fps under emulation, and a stuttering scene tells no offset; at 180x144 the scene's texture is
# too coarse: correlation 0.66, not 0.95); vivid's output scaler fills the 720x576 PAL picture with
# it and its capture scaler takes it back to 360x288, which vivid then copies line by line (at
# 720x576 vivid fell to 6 fps beside a CPU hog, its copy and fieldcap's writes four times larger).
width=360 height=288 small=360x288
v4l2-ctl -d "$cap" -i 2 -c s_video_000_0_is_connected_to=2 -c osd_text_mode=2 \
	--set-fmt-video=width=$width,height=$height,pixelformat=GREY,field=interlaced
v4l2-ctl -d "$out" -o 0 --set-fmt-video-out=width=360,height=288,pixelformat=GREY,field=interlaced
v4l2-ctl -d "$cap" --get-fmt-video | grep -q "Grey" || { echo "FAIL: the capture node is not GREY"; exit 1; }

work=$FIELDCAP_TEST_TMP/check-sync-vivid
mkdir -p "$work"
# The scene, rendered ahead: 6 s of a turning camera at vivid's PAL rate.
"$fieldcap" --cam synthetic:$small@25,format=GREY,motion=hand,id=scene \
	--duration 6s --out "$work/rendered" -q
ffmpeg -v error -i "$work/rendered/scene.mkv" -fps_mode passthrough -f rawvideo -pix_fmt gray "$work/rendered.raw"
session=$work/session
# The loopback tool plays the scene a fixed time after its rendering (the first frame 3 s after it
# has loaded them, longer when the recorder was not capturing by then) and gives the IMU's stamps
# the same delay, so that it turns now as the scene shows; it ends the recorder after the last
# frame (the duration is only a cap).
/usr/bin/python3 "$tools/vivid_loopback.py" "$work/rendered.raw" "$work/rendered/scene.timestamps.jsonl" "$out" \
	360 288 -- \
	"$fieldcap" --cam "$cap,id=cam,size=${width}x${height},format=GREY" \
	--imu "synthetic:400,id=imu,motion=hand,delay={delay_ms}ms" --duration 60s --out "$session" -q \
	>"$work/played.json"
/usr/bin/python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p.pop("shows"); print("played:", p)' \
	"$work/played.json"
"$fieldcap" validate -q "$session"
ffmpeg -v error -i "$session/cam.mkv" -fps_mode passthrough -f rawvideo -pix_fmt gray "$work/captured.raw"
/usr/bin/python3 "$tools/vivid_loopback.py" measure "$work/captured.raw" "$session" \
	$width $height 1 "$work/played.json" >"$work/truth.json"
echo "truth: $(cat "$work/truth.json")"
# What to analyse: the longest steady stretch (vivid kept up: no frame lost, none held for long)
# when it is 2.5 s or more, else where played frames came through at all (a host so busy that
# the emulated vivid held frames for several periods: see the checks below).
stretch=$(/usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))
part = "steady" if t.get("steady", {}).get("seconds", 0) >= 2.5 else "whole"
print(part, t[part]["from_s"], t[part]["to_s"])' "$work/truth.json")
set -- $stretch
"$fieldcap" check-sync "$session" --from "$2" --to "$3" --max-offset 200 --json >"$work/check.json" || true
"$fieldcap" check-sync "$session" --from "$2" --to "$3" --max-offset 200 || true
/usr/bin/python3 - "$work/truth.json" "$work/check.json" "$work/played.json" "$1" <<'PY'
import json, sys
truth, check, played = (json.load(open(p)) for p in sys.argv[1:4])
# The method's own error beside the spread of the true lags (see the header).
MARGIN_NS = 5_000_000
part = sys.argv[4]
fails = []
if played["recorder_status"] != 0:
    fails.append(f"fieldcap exited {played['recorder_status']}")
if "whole" not in truth:
    fails.append(f"none of the {truth['captured']} captured frames carries a played frame's number")
    part = None
pair = check["pairs"][0]
found = pair["image_alignment"]
if part == "steady":
    lags = truth["steady"]
    # vivid's loopback lag varies within a run (a frame lands either side of its output's tick):
    # the offset must lie among the true lags and within a quarter frame of their mean.
    if "offset_ns" not in found:
        fails.append(f"check-sync refused a steady stretch of {lags['seconds']} s: {found}")
    else:
        error = found["offset_ns"] - lags["lag_mean_ns"]
        print(f"check-sync {found['offset_ns'] / 1e6:+.2f} ms (confidence {found['confidence']:.2f}) over "
              f"{lags['seconds']} s, the true lag {lags['lag_mean_ns'] / 1e6:+.2f} ms mean "
              f"({lags['lag_min_ns'] / 1e6:+.1f} to {lags['lag_max_ns'] / 1e6:+.1f}): error {error / 1e6:+.2f} ms; "
              f"difference-energy peer: {pair['difference_energy']}")
        if abs(error) > 10_000_000 or not (
                lags["lag_min_ns"] - MARGIN_NS <= found["offset_ns"] <= lags["lag_max_ns"] + MARGIN_NS):
            fails.append(f"check-sync's offset is {error / 1e6:+.2f} ms from the true mean lag")
elif part == "whole":
    # The host starved the emulated driver: vivid held frames for several periods (the scene
    # stops while the gyroscope turns), so no one offset is true. check-sync must then say so or
    # give one among the true lags, never a confident offset outside them.
    lags = truth["whole"]
    print(f"NOTE: vivid never kept up for 2.5 s (longest steady stretch "
          f"{truth.get('steady', {}).get('seconds', 0)} s; lags {lags['lag_min_ns'] / 1e6:+.1f} to "
          f"{lags['lag_max_ns'] / 1e6:+.1f} ms): a host too busy for the emulated driver's real time, so "
          f"only that check-sync does not claim a wrong offset is checked")
    if "offset_ns" in found and not (
            lags["lag_min_ns"] - MARGIN_NS <= found["offset_ns"] <= lags["lag_max_ns"] + MARGIN_NS):
        fails.append(f"check-sync claimed {found['offset_ns'] / 1e6:+.2f} ms, more than 5 ms outside every true lag")
    print(f"check-sync on the whole stretch: {found}")
for fail in fails:
    print("FAIL:", fail)
sys.exit(1 if fails else 0)
PY
echo "PASS: check-sync on frames through vivid's loopback"
