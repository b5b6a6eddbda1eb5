#!/usr/bin/env python3
"""Judges `fieldcap export --blur-faces` by tools nobody here wrote: OpenCV's Haar frontal-face
cascade (Debian's opencv-data, run by Debian's python3-opencv: another detector than fieldcap's)
and OpenCV's PNG and JPEG readers. Run it with /usr/bin/python3 (pip's OpenCV 5 has no cascades).

  faces_check.py euroc PLAIN COVERED   the same session exported twice to EuRoC (RGB PNGs),
      as recorded and with --blur-faces: in every camera, the cascade finds faces in the plain
      frames, and none in the covered frames where it found one in the plain (boxes overlapping
      by a third); every pixel outside the boxes faces_covered.csv lists is the plain one, bit for
      bit (over 40 dB for an MJPEG camera, whose covered frames are JPEGs written again);
      faces_covered.json says every frame was looked at.
      With --some, frames where the cascade finds no face may have no box (a loopback's frames
      before its scene plays).
  faces_check.py images PLAIN COVERED  the same for image folders (JPEG): outside the boxes
      frames.jsonl lists, PSNR over 40 dB against the plain JPEG.
  faces_check.py mcap FILE CAMERA      the MCAP's metadata record fieldcap.faces_covered, read by
      the mcap library: CAMERA's report, every frame looked at and covered (runs with pip's
      Python, where the mcap library is).
  faces_check.py mp4 PLAIN COVERED     an MP4 as exported plain and one uploaded with its faces
      covered (lossy both, different ranges): the cascade finds a face in most plain frames and in
      no covered frame.
  faces_check.py session PLAIN COVERED CAMERA exact|lossy   two extracts of a session, plain
      and with --blur-faces: the same timestamp lines and frame log lines (the covered one's with
      each frame's boxes), the report in fieldcap.json, and CAMERA's frames (decoded by OpenCV's
      FFmpeg) judged as above: bit for bit outside the boxes (exact: grey), or over 40 dB (lossy:
      YUYV and NV12, whose chroma FFmpeg's conversion spreads across a box's edge).
  faces_check.py preview VIDEO DIR  a recorded video (faces as captured: the cascade finds them
      in most frames) and the JPEGs a live preview showed of that camera (DIR): none holds a face.
Prints one line per camera; exits 1 on the first failure.
"""
import csv, json, os, sys

if sys.argv[1] == "mcap":
    from mcap.reader import make_reader
    with open(sys.argv[2], "rb") as stream:
        records = {m.name: m.metadata for m in make_reader(stream).iter_metadata()}
    report = json.loads(records.get("fieldcap.faces_covered", {}).get(sys.argv[3], "null") or "null")
    if not report or report["frames"] == 0 or report["frames_covered"] != report["frames"]:
        print(f"FAIL: fieldcap.faces_covered for {sys.argv[3]}: {report} (records: {sorted(records)})")
        sys.exit(1)
    print(f"mcap {sys.argv[3]}: {report['frames_covered']} of {report['frames']} frames covered")
    sys.exit(0)

import cv2
import numpy as np

# alt2 with 5 neighbours: the default cascade also finds a "face" in the astronaut's shoulder,
# which no cover should hide.
cascade = cv2.CascadeClassifier("/usr/share/opencv4/haarcascades/haarcascade_frontalface_alt2.xml")
if cascade.empty():
    sys.exit("FAIL: no Haar cascade: install Debian's opencv-data and python3-opencv")


def faces(image):
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
    return [tuple(map(int, f)) for f in cascade.detectMultiScale(grey, 1.1, 5, minSize=(36, 36))]


def overlap(a, b):
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0
    return w * h / (a[2] * a[3] + b[2] * b[3] - w * h)


def mask(shape, boxes, margin):
    """True outside every box, each widened by `margin` pixels (2 for rounding and YUYV's pairs;
    16 for a JPEG, whose 16x8 blocks across a box's edge are coded again whole)."""
    outside = np.ones(shape[:2], bool)
    for x, y, w, h in boxes:
        outside[max(0, y - margin):y + h + margin, max(0, x - margin):x + w + margin] = False
    return outside


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def judge(name, frames, some=False):
    """frames: (plain image, covered image, covered boxes, exact) per frame. `some`: frames
    without a face (a loopback's before its scene plays) may have no box, where the cascade
    finds no face in them either."""
    found = hidden = empty = 0
    worst = 99.0
    for index, (plain, covered, boxes, exact) in enumerate(frames):
        if not boxes and some and not faces(plain):
            empty += 1
            continue
        if not boxes:
            fail(f"{name} frame {index}: no box covered")
        outside = mask(plain.shape, boxes, 2 if exact else 16)
        if exact:
            if not np.array_equal(plain[outside], covered[outside]):
                fail(f"{name} frame {index}: {int((plain[outside] != covered[outside]).sum())} values outside the boxes changed")
        else:
            difference = (plain[outside].astype(float) - covered[outside].astype(float)) ** 2
            psnr = 10 * np.log10(255 ** 2 / max(difference.mean(), 1e-9))
            worst = min(worst, psnr)
            if psnr < 40:
                fail(f"{name} frame {index}: outside the boxes {psnr:.1f} dB from the plain export")
        seen = faces(plain)
        found += len(seen)
        left = [f for f in faces(covered) if any(overlap(f, s) > 1 / 3 for s in seen)]
        if left:
            fail(f"{name} frame {index}: a face is still found at {left[0]} after covering")
        hidden += len(seen)
    if found < (len(frames) - empty) // 2 or found < 5:
        fail(f"{name}: the cascade found only {found} faces in {len(frames) - empty} plain frames: no faces to cover?")
    exactness = "bit-exact" if frames[0][3] else f"PSNR >= {worst:.1f} dB"
    print(f"{name}: {len(frames)} frames ({empty} without a face or a box), {hidden} faces the cascade found plain,"
          f" none after covering; outside the boxes {exactness}")


def euroc(plain, covered, some=False):
    root = os.path.join(covered, "mav0")
    cameras = sorted(d for d in os.listdir(root) if d.startswith("cam"))
    if not cameras:
        fail("no camera folders")
    for camera in cameras:
        report = json.load(open(os.path.join(root, camera, "faces_covered.json")))
        rows = [r for r in csv.reader(open(os.path.join(root, camera, "faces_covered.csv"))) if not r[0].startswith("#")]
        names = sorted(os.listdir(os.path.join(root, camera, "data")))
        looked = -(-report["frames"] // report["detect_every"])  # every N-th frame, the first included
        if report["frames_detected"] != looked or len(rows) != len(names):
            fail(f"{camera}: {report['frames']} frames, {report['frames_detected']} looked at (not {looked}), "
                 f"{len(rows)} rows, {len(names)} PNGs")
        frames = []
        for row in rows:
            boxes = [tuple(map(int, b.split())) for b in row[1].split(";") if b]
            a = cv2.imread(os.path.join(plain, "mav0", camera, "data", f"{row[0]}.png"), cv2.IMREAD_UNCHANGED)
            b = cv2.imread(os.path.join(root, camera, "data", f"{row[0]}.png"), cv2.IMREAD_UNCHANGED)
            # An MJPEG camera's covered frames were written again as JPEG: PSNR outside the boxes.
            frames.append((a, b, boxes, "recoded_jpeg_quality" not in report))
        judge(f"euroc {camera}", frames, some)


def images(plain, covered):
    meta = json.load(open(os.path.join(covered, "metadata.json")))
    if not meta.get("faces_covered") or meta["faces_covered"]["cover"] != "pixelation":
        fail(f"metadata.json: faces_covered is {meta.get('faces_covered')}")
    frames = []
    for line in open(os.path.join(covered, "frames.jsonl")):
        entry = json.loads(line)
        name = f"{entry['frame_index']:06d}.jpg"
        a = cv2.imread(os.path.join(plain, "rgb", name))
        b = cv2.imread(os.path.join(covered, "rgb", name))
        frames.append((a, b, [tuple(box) for box in entry["faces_covered"]], False))
    judge("images", frames)


def frames(path):
    video = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    while True:
        ok, image = video.read()
        if not ok:
            return
        yield image


def mp4(plain, covered):
    seen = [len(faces(image)) for image in frames(plain)]
    if not seen or sum(1 for n in seen if n) < len(seen) // 2:
        fail(f"{plain}: the cascade found a face in {sum(1 for n in seen if n)} of {len(seen)} plain frames")
    left = [index for index, image in enumerate(frames(covered)) if faces(image)]
    count = sum(1 for _ in frames(covered))
    if count == 0:
        fail(f"{covered}: no frame decoded")
    if left:
        fail(f"{covered}: a face is found in {len(left)} of {count} covered frames, the first {left[0]}")
    print(f"mp4: faces in {sum(1 for n in seen if n)} of {len(seen)} plain frames, none in {count} covered frames")


def session(plain, covered, camera, exact):
    """Two extracts of one session, plain and covered: the same frames and times, each covered
    frame's boxes in its frame log line, the camera's report in fieldcap.json."""
    for name in (f"{camera}.timestamps.jsonl",):
        if open(os.path.join(plain, name), "rb").read() != open(os.path.join(covered, name), "rb").read():
            fail(f"{name} differs between the plain and the covered extract")
    streams = {s["id"]: s for s in json.load(open(os.path.join(covered, "fieldcap.json")))["streams"]}
    report = streams[camera].get("faces_covered")
    if not report or report["cover"] != "pixelation":
        fail(f"fieldcap.json: {camera}'s faces_covered is {report}")
    lines = [json.loads(line) for line in open(os.path.join(covered, f"{camera}.frames.ndjson"))]
    plain_lines = [json.loads(line) for line in open(os.path.join(plain, f"{camera}.frames.ndjson"))]
    if [{k: v for k, v in line.items() if k != "faces_covered"} for line in lines] != plain_lines:
        fail(f"{camera}.frames.ndjson: the covered extract's lines are not the plain ones with their boxes")
    pairs = list(zip(frames(os.path.join(plain, f"{camera}.mkv")), frames(os.path.join(covered, f"{camera}.mkv"))))
    if len(pairs) != len(lines) or len(pairs) != report["frames"]:
        fail(f"{camera}: {len(pairs)} frames decoded, {len(lines)} frame log lines, {report['frames']} in the report")
    judge(f"session {camera}", [(a, b, [tuple(box) for box in line.get("faces_covered", [])], exact)
                                for (a, b), line in zip(pairs, lines)])


def preview(recorded, shown):
    """A recorded video (faces as captured) and the JPEGs a preview showed of the same camera."""
    seen = [len(faces(image)) for image in frames(recorded)]
    if not seen or sum(1 for n in seen if n) < len(seen) // 2:
        fail(f"{recorded}: the cascade found a face in {sum(1 for n in seen if n)} of {len(seen)} recorded frames")
    names = sorted(os.listdir(shown))
    if not names:
        fail(f"{shown}: no preview frame")
    for name in names:
        image = cv2.imread(os.path.join(shown, name))
        if image is None:
            fail(f"{shown}/{name}: not a JPEG OpenCV reads")
        if faces(image):
            fail(f"{shown}/{name}: a face is found in the preview at {faces(image)[0]}")
    print(f"preview: faces in {sum(1 for n in seen if n)} of {len(seen)} recorded frames, none in {len(names)} shown")


if __name__ == "__main__":
    if sys.argv[1] == "euroc" and sys.argv[4:] == ["--some"]:
        euroc(sys.argv[2], sys.argv[3], some=True)
    elif sys.argv[1] == "preview":
        preview(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "session":
        session(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "exact")
    else:
        {"euroc": euroc, "images": images, "mp4": mp4}[sys.argv[1]](sys.argv[2], sys.argv[3])
