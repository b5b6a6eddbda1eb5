// MTCNN on OpenCV's DNN module (see CFaceDetector.h). The three stages: the proposal net slides
// a 12x12 window (stride 2) over each level of an image pyramid and proposes boxes with a
// correction of their edges; the refine net (24x24) and the output net (48x48) score each
// proposal's crop again and correct it further. Overlapping boxes are merged after each stage
// (non-maximum suppression).
#include "CFaceDetector.h"

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

struct fc_face_detector {
    cv::dnn::Net proposal, refine, output;
};

namespace {

struct Candidate {
    // Corners in pixels of the image (x2, y2 past the box).
    float x1, y1, x2, y2;
    float score;
    // The net's correction of each edge, in parts of the box's width or height.
    float correction[4];
    float width() const { return x2 - x1; }
    float height() const { return y2 - y1; }
};

// The nets were converted from a framework that lays a batch of images out as [image, column,
// row, channel] (each image transposed against OpenCV's rows), values as (v - 127.5) / 128.
cv::Mat blobOf(const std::vector<cv::Mat> &images) {
    const int rows = images[0].rows, columns = images[0].cols;
    const int shape[] = {static_cast<int>(images.size()), columns, rows, 3};
    cv::Mat blob(4, shape, CV_32F);
    for (size_t k = 0; k < images.size(); k++) {
        cv::Mat transposed;
        cv::transpose(images[k], transposed);
        cv::Mat slice(columns, rows, CV_32FC3, blob.ptr<float>(static_cast<int>(k)));
        transposed.convertTo(slice, CV_32FC3, 1.0 / 128, -127.5 / 128);
    }
    return blob;
}

float overlap(const Candidate &a, const Candidate &b, bool ofSmaller) {
    const float w = std::max(0.0f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
    const float h = std::max(0.0f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
    const float shared = w * h, areaA = a.width() * a.height(), areaB = b.width() * b.height();
    const float base = ofSmaller ? std::min(areaA, areaB) : areaA + areaB - shared;
    return base > 0 ? shared / base : 0;
}

// The most likely boxes, each dropping the boxes it overlaps by more than `threshold` (of their
// union, or of the smaller one).
std::vector<Candidate> suppressed(std::vector<Candidate> boxes, float threshold, bool ofSmaller) {
    std::sort(boxes.begin(), boxes.end(), [](const Candidate &a, const Candidate &b) { return a.score > b.score; });
    std::vector<Candidate> kept;
    for (const Candidate &box : boxes) {
        bool covered = false;
        for (const Candidate &other : kept) {
            if (overlap(box, other, ofSmaller) > threshold) {
                covered = true;
                break;
            }
        }
        if (!covered) kept.push_back(box);
    }
    return kept;
}

void correct(Candidate &box) {
    const float w = box.width(), h = box.height();
    box.x1 += box.correction[0] * w;
    box.y1 += box.correction[1] * h;
    box.x2 += box.correction[2] * w;
    box.y2 += box.correction[3] * h;
}

void square(Candidate &box) {
    const float side = std::max(box.width(), box.height());
    const float cx = (box.x1 + box.x2) / 2, cy = (box.y1 + box.y2) / 2;
    box.x1 = std::floor(cx - side / 2);
    box.y1 = std::floor(cy - side / 2);
    box.x2 = box.x1 + std::round(side);
    box.y2 = box.y1 + std::round(side);
}

// The box's pixels at `size` x `size`, black where the box leaves the image.
cv::Mat crop(const cv::Mat &rgb, const Candidate &box, int size) {
    const int x = static_cast<int>(box.x1), y = static_cast<int>(box.y1);
    const int w = std::max(1, static_cast<int>(box.width())), h = std::max(1, static_cast<int>(box.height()));
    cv::Mat padded = cv::Mat::zeros(h, w, CV_8UC3);
    const cv::Rect inside = cv::Rect(x, y, w, h) & cv::Rect(0, 0, rgb.cols, rgb.rows);
    if (inside.area() > 0) {
        rgb(inside).copyTo(padded(cv::Rect(inside.x - x, inside.y - y, inside.width, inside.height)));
    }
    cv::Mat scaled;
    cv::resize(padded, scaled, cv::Size(size, size), 0, 0, cv::INTER_AREA);
    return scaled;
}

struct Settings {
    int minFace;
    float thresholds[3];
    float scaleStep;
};

std::vector<Candidate> propose(fc_face_detector &nets, const cv::Mat &rgb, const Settings &settings) {
    std::vector<Candidate> all;
    const float first = 12.0f / static_cast<float>(settings.minFace);
    float scale = first;
    for (float side = std::min(rgb.rows, rgb.cols) * first; side >= 12; side *= settings.scaleStep) {
        const int w = static_cast<int>(std::ceil(rgb.cols * scale)), h = static_cast<int>(std::ceil(rgb.rows * scale));
        cv::Mat level;
        cv::resize(rgb, level, cv::Size(w, h), 0, 0, cv::INTER_AREA);
        nets.proposal.setInput(blobOf({level}));
        std::vector<cv::Mat> outputs;
        nets.proposal.forward(outputs, std::vector<cv::String>{"conv2d_4", "softmax"});
        // [1, columns, rows, 4] corrections and [1, columns, rows, 2] probabilities (not a face, a face).
        const cv::Mat &corrections = outputs[0], &probabilities = outputs[1];
        std::vector<Candidate> found;
        for (int i = 0; i < probabilities.size[1]; i++) {
            for (int j = 0; j < probabilities.size[2]; j++) {
                const int at[] = {0, i, j, 1};
                const float score = probabilities.at<float>(at);
                if (score < settings.thresholds[0]) continue;
                Candidate box{2 * i / scale, 2 * j / scale, (2 * i + 12) / scale, (2 * j + 12) / scale, score, {}};
                for (int e = 0; e < 4; e++) {
                    const int edge[] = {0, i, j, e};
                    box.correction[e] = corrections.at<float>(edge);
                }
                found.push_back(box);
            }
        }
        for (const Candidate &box : suppressed(found, 0.5f, false)) all.push_back(box);
        scale *= settings.scaleStep;
    }
    all = suppressed(all, 0.7f, false);
    for (Candidate &box : all) {
        correct(box);
        square(box);
    }
    return all;
}

// Scores the crops of `boxes` through `net` (input `size`), keeps those above `threshold` with
// their corrections.
std::vector<Candidate> rescore(
    cv::dnn::Net &net, const cv::Mat &rgb, const std::vector<Candidate> &boxes, int size, float threshold,
    const std::vector<cv::String> &names) {
    std::vector<cv::Mat> crops;
    for (const Candidate &box : boxes) crops.push_back(crop(rgb, box, size));
    net.setInput(blobOf(crops));
    std::vector<cv::Mat> outputs;
    net.forward(outputs, names);
    // [n, 4] corrections first, [n, 2] probabilities last.
    const cv::Mat &corrections = outputs.front(), &probabilities = outputs.back();
    std::vector<Candidate> kept;
    for (size_t k = 0; k < boxes.size(); k++) {
        const float score = probabilities.at<float>(static_cast<int>(k), 1);
        if (score <= threshold) continue;
        Candidate box = boxes[k];
        box.score = score;
        for (int e = 0; e < 4; e++) box.correction[e] = corrections.at<float>(static_cast<int>(k), e);
        kept.push_back(box);
    }
    return kept;
}

void say(char *error, size_t size, const char *what, const std::string &why) {
    if (error != nullptr && size > 0) snprintf(error, size, "%s: %s", what, why.c_str());
}

}  // namespace

extern "C" int fc_face_detector_abi(void) { return FC_FACE_DETECTOR_ABI; }

extern "C" fc_face_detector *fc_face_detector_open(
    const char *model_directory, int threads, char *error, size_t error_size) {
    std::string path;
    try {
        cv::setNumThreads(std::max(1, threads));
        auto detector = std::make_unique<fc_face_detector>();
        const std::string directory(model_directory);
        path = directory + "/pnet.onnx";
        detector->proposal = cv::dnn::readNetFromONNX(path);
        path = directory + "/rnet.onnx";
        detector->refine = cv::dnn::readNetFromONNX(path);
        path = directory + "/onet.onnx";
        detector->output = cv::dnn::readNetFromONNX(path);
        return detector.release();
    } catch (const std::exception &failure) {
        say(error, error_size, path.empty() ? "OpenCV" : path.c_str(), failure.what());
        return nullptr;
    } catch (...) {
        say(error, error_size, path.empty() ? "OpenCV" : path.c_str(), "an exception that is not std::exception");
        return nullptr;
    }
}

extern "C" int fc_face_detector_detect(
    fc_face_detector *detector, const uint8_t *pixels, int width, int height, int stride, int channels,
    int min_face, const float *thresholds, float scale_step, float *faces, int capacity, char *error,
    size_t error_size) {
    if (width < 12 || height < 12 || (channels != 1 && channels != 3) || min_face < 12 || !(scale_step > 0.1f) ||
        !(scale_step < 0.95f)) {
        say(error, error_size, "face detection",
            "needs an image of 12x12 pixels or more, grey or RGB, a face of 12 or more, a scale step of 0.1 to 0.95");
        return -1;
    }
    const Settings settings{min_face, {thresholds[0], thresholds[1], thresholds[2]}, scale_step};
    try {
        const cv::Mat image(height, width, channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(pixels),
                            static_cast<size_t>(stride));
        cv::Mat rgb;
        if (channels == 1) {
            cv::cvtColor(image, rgb, cv::COLOR_GRAY2RGB);
        } else {
            rgb = image;
        }
        std::vector<Candidate> boxes = propose(*detector, rgb, settings);
        if (!boxes.empty()) {
            boxes = rescore(detector->refine, rgb, boxes, 24, settings.thresholds[1], {"dense_2", "softmax_1"});
            boxes = suppressed(boxes, 0.7f, false);
            for (Candidate &box : boxes) {
                correct(box);
                square(box);
            }
        }
        if (!boxes.empty()) {
            boxes = rescore(detector->output, rgb, boxes, 48, settings.thresholds[2], {"dense_5", "softmax_2"});
            for (Candidate &box : boxes) correct(box);
            // A correction can turn a box inside out or send it to infinity: such a box is no face's.
            boxes.erase(std::remove_if(boxes.begin(), boxes.end(),
                                       [&](const Candidate &box) {
                                           return !std::isfinite(box.x1) || !std::isfinite(box.y1) ||
                                                  !std::isfinite(box.x2) || !std::isfinite(box.y2) ||
                                                  box.width() < 1 || box.height() < 1 ||
                                                  box.width() > 4.0f * rgb.cols || box.height() > 4.0f * rgb.rows;
                                       }),
                        boxes.end());
            boxes = suppressed(boxes, 0.7f, true);
        }
        for (size_t k = 0; k < boxes.size() && static_cast<int>(k) < capacity; k++) {
            const Candidate &box = boxes[k];
            const float values[] = {box.x1, box.y1, box.width(), box.height(), box.score};
            std::copy(values, values + 5, faces + 5 * k);
        }
        return static_cast<int>(boxes.size());
    } catch (const std::exception &failure) {
        say(error, error_size, "face detection", failure.what());
        return -1;
    } catch (...) {
        say(error, error_size, "face detection", "an exception that is not std::exception");
        return -1;
    }
}

extern "C" void fc_face_detector_close(fc_face_detector *detector) { delete detector; }
