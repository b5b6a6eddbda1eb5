/*
 * uvc-feeder: the program behind the kernel rig's USB camera. It answers the UVC gadget's
 * requests (usb_f_uvc on dummy_hcd, lib/uvc-gadget.sh) and streams numbered frames to the
 * gadget's V4L2 output node, so the guest's own uvcvideo sees a webcam whose every frame a test
 * can identify.
 *
 *   uvc-feeder --modes            the modes it offers, one "kind width height interval..." line
 *                                 each, in the gadget's order (lib/uvc-gadget.sh builds configfs
 *                                 from them, so the two never disagree)
 *   uvc-feeder NODE LOG           serve NODE (the gadget's output node) until SIGTERM
 *
 * Each frame carries, in its top rows, 128 cells of 16x16 pixels (dark 0, light 1): the frame
 * number (32 bits), the feeder's CLOCK_MONOTONIC_RAW reading as it made the frame (64
 * bits) and a check word (32 bits), most significant bit first, row by row, 16 cells a row.
 * MJPEG frames carry the same as text in a JPEG comment (COM): "fieldcap-uvc-feeder frame N
 * raw_ns T". The rest is a pattern that moves one step a frame.
 *
 * LOG gets one line per event, for the test to hold fieldcap's recording against:
 *   stream KIND WIDTH HEIGHT INTERVAL_100NS     the host committed a mode and started a stream
 *   queued FRAME RAW_NS BYTES QBUF_NS PTS_NS    frame FRAME, made at RAW_NS (the reading in its
 *                                               pixels), handed to the gadget at QBUF_NS; its
 *                                               PTS read between PTS_NS and QBUF_NS (RAW)
 *   sent FRAME RAW_NS                           the gadget gave its buffer back (sent or dropped)
 *   late RAW_NS                                 a frame time passed with no buffer free
 *   exposure UNITS                              the host set the exposure time (100 us units)
 *   ae_mode MODE                                the host set the auto-exposure mode (1 manual,
 *                                               2 auto: UVC's bitmap)
 *   exposure_auto FRAME UNITS                   on auto exposure, the feeder chose this time from
 *                                               frame FRAME on (it changes every 12 frames)
 *   stop REASON                                 the stream ended (streamoff, disconnect)
 *
 * Frames are paced by the committed interval on CLOCK_MONOTONIC_RAW, as a sensor's are. Each
 * frame's buffer timestamp (CLOCK_MONOTONIC, read just before QBUF_NS) is what the gadget sends as
 * its PTS: the start of its exposure, which lasts the exposure time the host set (10 ms if none).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/usb/ch9.h>
#include <linux/usb/g_uvc.h>
#include <linux/usb/video.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

enum kind { YUYV, MJPEG };

struct frame_size {
	unsigned width, height;
};

/* The gadget's formats, in bFormatIndex order; frames in bFrameIndex order. */
static const struct format {
	enum kind kind;
	const char *name;
	struct frame_size frames[2];
} formats[] = {
	{YUYV, "yuyv", {{640, 480}, {320, 240}}},
	{MJPEG, "mjpeg", {{1280, 720}, {640, 480}}},
};
#define FORMATS (sizeof(formats) / sizeof(formats[0]))
#define FRAMES 2
/* 30 and 15 frames a second, in 100 ns units; the first is the default. */
static const uint32_t intervals[] = {333333, 666666};
#define INTERVALS 2
#define BUFFERS 4
#define CELL 16
#define CELLS_PER_ROW 16
#define BITS 128

static uint32_t max_frame_bytes(const struct format *format, const struct frame_size *size) {
	/* YUYV must be exact (uvcvideo drops other sizes); a JPEG of these patterns stays far below. */
	return format->kind == YUYV ? size->width * size->height * 2 : size->width * size->height;
}

static void print_modes(void) {
	for (size_t f = 0; f < FORMATS; f++)
		for (size_t s = 0; s < FRAMES; s++) {
			printf("%s %u %u %u", formats[f].name, formats[f].frames[s].width, formats[f].frames[s].height,
			       max_frame_bytes(&formats[f], &formats[f].frames[s]));
			for (size_t i = 0; i < INTERVALS; i++) printf(" %u", intervals[i]);
			printf("\n");
		}
}

static volatile sig_atomic_t stopping;
static void on_signal(int signal) {
	(void)signal;
	stopping = 1;
}

static FILE *logfile;
static int node;
static uint32_t max_payload;

static int64_t now_ns(clockid_t clock) {
	struct timespec t;
	clock_gettime(clock, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void fail(const char *what) {
	fprintf(stderr, "uvc-feeder: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The probe and commit controls, as the host last set them. */
static struct uvc_streaming_control probe, commit;
static int last_selector;

/*
 * The camera terminal's exposure time (UVC_CT_EXPOSURE_TIME_ABSOLUTE_CONTROL, 100 us units), when
 * the gadget offers it (bmControls bit 3): what the host sets is logged ("exposure UNITS"), and
 * each frame's PTS is the start of an exposure that long.
 */
#define CAMERA_TERMINAL 1
static uint32_t exposure_units = 100;
static int exposure_set_pending;

/*
 * Its auto-exposure mode (UVC_CT_AE_MODE_CONTROL, bmControls bit 1), manual (1, the default) or
 * auto (2): on auto the feeder changes the exposure time itself, as a camera following the light
 * does, through a fixed cycle of times, just before the frame that first has it. What the host
 * reads (GET_CUR) is the time now, as a real camera's auto-updated control.
 */
static uint8_t ae_mode = 1;
static int ae_mode_set_pending;
static const uint32_t auto_cycle[] = {50, 120, 80, 200, 30, 150};

static void fill_control(struct uvc_streaming_control *control, size_t format, size_t frame, size_t interval) {
	memset(control, 0, sizeof(*control));
	control->bmHint = 1;
	control->bFormatIndex = format + 1;
	control->bFrameIndex = frame + 1;
	control->dwFrameInterval = intervals[interval];
	control->dwMaxVideoFrameSize = max_frame_bytes(&formats[format], &formats[format].frames[frame]);
	/* Must be the module's bulk payload: uvcvideo cuts payloads at this size. */
	control->dwMaxPayloadTransferSize = max_payload;
	control->dwClockFrequency = 48000000;
	control->bmFramingInfo = 3;
	control->bPreferedVersion = 1;
	control->bMinVersion = 1;
	control->bMaxVersion = 1;
}

/* A control the host asked for, made one the gadget offers. */
static void clamp_control(struct uvc_streaming_control *control, const struct uvc_streaming_control *asked) {
	size_t format = asked->bFormatIndex >= 1 && asked->bFormatIndex <= FORMATS ? asked->bFormatIndex - 1 : 0;
	size_t frame = asked->bFrameIndex >= 1 && asked->bFrameIndex <= FRAMES ? asked->bFrameIndex - 1 : 0;
	size_t interval = 0;
	for (size_t i = 0; i < INTERVALS; i++)
		if (asked->dwFrameInterval >= intervals[i]) interval = i;
	fill_control(control, format, frame, interval);
}

static void answer_setup(const struct usb_ctrlrequest *request) {
	struct uvc_request_data response;
	memset(&response, 0, sizeof(response));
	response.length = -EL2HLT; /* stall what is not answered below */
	unsigned interface = request->wIndex & 0xff, selector = request->wValue >> 8;
	if ((request->bRequestType & USB_TYPE_MASK) == USB_TYPE_CLASS && interface == 1
	    && (selector == UVC_VS_PROBE_CONTROL || selector == UVC_VS_COMMIT_CONTROL)) {
		struct uvc_streaming_control *current = selector == UVC_VS_PROBE_CONTROL ? &probe : &commit;
		struct uvc_streaming_control answer;
		switch (request->bRequest) {
		case UVC_SET_CUR:
			last_selector = selector;
			response.length = sizeof(struct uvc_streaming_control);
			break;
		case UVC_GET_CUR:
			memcpy(response.data, current, sizeof(*current));
			response.length = sizeof(*current);
			break;
		case UVC_GET_MIN:
		case UVC_GET_DEF:
			fill_control(&answer, 0, 0, 0);
			memcpy(response.data, &answer, sizeof(answer));
			response.length = sizeof(answer);
			break;
		case UVC_GET_MAX:
			fill_control(&answer, FORMATS - 1, FRAMES - 1, INTERVALS - 1);
			memcpy(response.data, &answer, sizeof(answer));
			response.length = sizeof(answer);
			break;
		case UVC_GET_RES:
			response.length = sizeof(struct uvc_streaming_control);
			break;
		case UVC_GET_LEN:
			response.data[0] = sizeof(struct uvc_streaming_control);
			response.length = 2;
			break;
		case UVC_GET_INFO:
			response.data[0] = 3; /* GET and SET */
			response.length = 1;
			break;
		}
	} else if ((request->bRequestType & USB_TYPE_MASK) == USB_TYPE_CLASS && interface == 0
		   && (request->wIndex >> 8) == CAMERA_TERMINAL && selector == UVC_CT_EXPOSURE_TIME_ABSOLUTE_CONTROL) {
		uint32_t value = 0;
		response.length = 4;
		switch (request->bRequest) {
		case UVC_SET_CUR: exposure_set_pending = 1; break;
		case UVC_GET_CUR: value = exposure_units; break;
		case UVC_GET_MIN: value = 1; break;
		case UVC_GET_MAX: value = 10000; break;
		case UVC_GET_RES: value = 1; break;
		case UVC_GET_DEF: value = 100; break;
		case UVC_GET_LEN: value = 4; response.length = 2; break;
		/* GET, SET and autoupdate (D3): the camera may change it itself (auto exposure), so
		 * uvcvideo asks for it at every read rather than keeping the value it set. */
		case UVC_GET_INFO: value = 0x0b; response.length = 1; break;
		default: response.length = -EL2HLT;
		}
		memcpy(response.data, &value, 4);
	} else if ((request->bRequestType & USB_TYPE_MASK) == USB_TYPE_CLASS && interface == 0
		   && (request->wIndex >> 8) == CAMERA_TERMINAL && selector == UVC_CT_AE_MODE_CONTROL) {
		response.length = 1;
		switch (request->bRequest) {
		case UVC_SET_CUR: ae_mode_set_pending = 1; break;
		case UVC_GET_CUR: response.data[0] = ae_mode; break;
		case UVC_GET_RES: response.data[0] = 0x03; break; /* manual and auto */
		case UVC_GET_DEF: response.data[0] = 1; break;
		case UVC_GET_LEN: response.data[0] = 1; response.length = 2; break;
		case UVC_GET_INFO: response.data[0] = 3; break; /* GET and SET */
		default: response.length = -EL2HLT;
		}
	} else if ((request->bRequestType & USB_TYPE_MASK) == USB_TYPE_CLASS && interface == 0
		   && (request->wIndex >> 8) == 0 && selector == UVC_VC_REQUEST_ERROR_CODE_CONTROL
		   && request->bRequest == UVC_GET_CUR) {
		response.data[0] = 0x06; /* "invalid request": what the stall before it was */
		response.length = 1;
	}
	if (ioctl(node, UVCIOC_SEND_RESPONSE, &response) < 0) fail("UVCIOC_SEND_RESPONSE");
}

/* The stream, while the host takes one. */
static struct {
	int on;
	const struct format *format;
	struct frame_size size;
	uint32_t sizeimage;
	int64_t interval_ns;
	int64_t next_ns;
	void *memory[BUFFERS];
	size_t length[BUFFERS];
	int free_[BUFFERS];
	uint32_t frame_of[BUFFERS];
} stream;
static uint32_t next_frame;
static tjhandle jpeg;
static unsigned char *gray;

static void commit_format(void) {
	size_t format = commit.bFormatIndex - 1, frame = commit.bFrameIndex - 1;
	stream.format = &formats[format];
	stream.size = formats[format].frames[frame];
	stream.interval_ns = (int64_t)commit.dwFrameInterval * 100;
	struct v4l2_format v;
	memset(&v, 0, sizeof(v));
	v.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
	v.fmt.pix.width = stream.size.width;
	v.fmt.pix.height = stream.size.height;
	v.fmt.pix.pixelformat = stream.format->kind == YUYV ? V4L2_PIX_FMT_YUYV : V4L2_PIX_FMT_MJPEG;
	v.fmt.pix.field = V4L2_FIELD_NONE;
	v.fmt.pix.sizeimage = max_frame_bytes(stream.format, &stream.size);
	if (ioctl(node, VIDIOC_S_FMT, &v) < 0) fail("VIDIOC_S_FMT");
	stream.sizeimage = v.fmt.pix.sizeimage;
}

/* The 128 identity bits of a frame. */
static int identity_bit(uint32_t frame, int64_t raw_ns, int bit) {
	uint64_t clock = (uint64_t)raw_ns;
	uint32_t check = frame ^ (uint32_t)(clock >> 32) ^ (uint32_t)clock ^ 0xa5a5a5a5u;
	if (bit < 32) return (frame >> (31 - bit)) & 1;
	if (bit < 96) return (clock >> (95 - bit)) & 1;
	return (check >> (127 - bit)) & 1;
}

/*
 * Writes frame `frame` as rows of `step` bytes a pixel (2: YUYV, its chroma a flat 128; 1: grey):
 * the identity cells on top, below them a diagonal ramp that moves 4 pixels a frame. Rows are
 * copied from precomputed lines: under the guest's emulated CPU, a computed pixel costs too much.
 */
static void draw(unsigned char *out, unsigned step, uint32_t frame, int64_t raw_ns) {
	unsigned width = stream.size.width, height = stream.size.height, cell_width = width / CELLS_PER_ROW;
	size_t row = (size_t)width * step;
	unsigned char *line = malloc(((size_t)width + 128) * step);
	unsigned identity_rows = (BITS / CELLS_PER_ROW) * CELL;
	for (unsigned cell_row = 0; cell_row < BITS / CELLS_PER_ROW; cell_row++) {
		for (unsigned x = 0; x < width; x++) {
			unsigned cell = x / cell_width;
			int bit = cell < CELLS_PER_ROW ? identity_bit(frame, raw_ns, cell_row * CELLS_PER_ROW + cell) : 0;
			line[x * step] = bit ? 220 : 30;
			if (step == 2) line[x * step + 1] = 128;
		}
		for (unsigned y = 0; y < CELL; y++) memcpy(out + (size_t)(cell_row * CELL + y) * row, line, row);
	}
	for (unsigned x = 0; x < width + 128; x++) {
		line[x * step] = (unsigned char)(40 + (x & 0x7f));
		if (step == 2) line[x * step + 1] = 128;
	}
	for (unsigned y = identity_rows; y < height; y++)
		memcpy(out + (size_t)y * row, line + (size_t)((y + frame * 4) & 0x7f) * step, row);
	free(line);
}

static uint32_t render(void *memory, size_t length, uint32_t frame, int64_t raw_ns) {
	unsigned width = stream.size.width, height = stream.size.height;
	if (stream.format->kind == YUYV) {
		draw(memory, 2, frame, raw_ns);
		return width * height * 2;
	}
	draw(gray, 1, frame, raw_ns);
	unsigned char *out = NULL;
	unsigned long size = 0;
	if (tjCompress2(jpeg, gray, width, 0, height, TJPF_GRAY, &out, &size, TJSAMP_GRAY, 85, TJFLAG_FASTDCT) < 0) {
		fprintf(stderr, "uvc-feeder: tjCompress2: %s\n", tjGetErrorStr2(jpeg));
		exit(1);
	}
	/* SOI, then the comment, then the rest of the JPEG. */
	char text[96];
	int text_length = snprintf(text, sizeof(text), "fieldcap-uvc-feeder frame %u raw_ns %lld", frame, (long long)raw_ns);
	size_t total = size + 4 + (size_t)text_length;
	if (total > length) {
		fprintf(stderr, "uvc-feeder: a JPEG of %zu bytes does not fit a buffer of %zu\n", total, length);
		exit(1);
	}
	unsigned char *p = memory;
	p[0] = 0xff, p[1] = 0xd8, p[2] = 0xff, p[3] = 0xfe;
	p[4] = (unsigned char)((text_length + 2) >> 8), p[5] = (unsigned char)(text_length + 2);
	memcpy(p + 6, text, (size_t)text_length);
	memcpy(p + 6 + text_length, out + 2, size - 2);
	tjFree(out);
	return (uint32_t)total;
}

static void queue_frame(int index) {
	uint32_t frame = next_frame++;
	if (ae_mode == 2 && frame % 12 == 0) {
		uint32_t units = auto_cycle[frame / 12 % (sizeof(auto_cycle) / sizeof(auto_cycle[0]))];
		if (units != exposure_units) {
			exposure_units = units;
			fprintf(logfile, "exposure_auto %u %u\n", frame, units);
		}
	}
	int64_t raw = now_ns(CLOCK_MONOTONIC_RAW);
	struct v4l2_buffer buffer;
	memset(&buffer, 0, sizeof(buffer));
	buffer.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
	buffer.memory = V4L2_MEMORY_MMAP;
	buffer.index = index;
	buffer.bytesused = render(stream.memory[index], stream.length[index], frame, raw);
	/* The gadget sends this as the frame's PTS (CLOCK_MONOTONIC, as a camera's own clock),
	 * read between two CLOCK_MONOTONIC_RAW readings: the PTS's instant lies between them. */
	int64_t before = now_ns(CLOCK_MONOTONIC_RAW);
	int64_t mono = now_ns(CLOCK_MONOTONIC);
	buffer.timestamp.tv_sec = mono / 1000000000;
	buffer.timestamp.tv_usec = mono % 1000000000 / 1000;
	int64_t handed = now_ns(CLOCK_MONOTONIC_RAW);
	if (ioctl(node, VIDIOC_QBUF, &buffer) < 0) {
		/* ENODEV: the host went; the DISCONNECT or STREAMOFF event follows. */
		fprintf(logfile, "refused %u %lld %s\n", frame, (long long)raw, strerror(errno));
		return;
	}
	stream.free_[index] = 0;
	stream.frame_of[index] = frame;
	fprintf(logfile, "queued %u %lld %u %lld %lld\n", frame, (long long)raw, buffer.bytesused, (long long)handed,
		(long long)before);
}

static void stream_off(const char *reason) {
	if (!stream.on) return;
	int type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
	ioctl(node, VIDIOC_STREAMOFF, &type);
	for (int i = 0; i < BUFFERS; i++)
		if (stream.memory[i]) munmap(stream.memory[i], stream.length[i]), stream.memory[i] = NULL;
	struct v4l2_requestbuffers request = {.count = 0, .type = V4L2_BUF_TYPE_VIDEO_OUTPUT, .memory = V4L2_MEMORY_MMAP};
	ioctl(node, VIDIOC_REQBUFS, &request);
	stream.on = 0;
	fprintf(logfile, "stop %s\n", reason);
	fflush(logfile);
}

static void stream_on(void) {
	stream_off("restart");
	commit_format();
	struct v4l2_requestbuffers request = {
		.count = BUFFERS, .type = V4L2_BUF_TYPE_VIDEO_OUTPUT, .memory = V4L2_MEMORY_MMAP};
	if (ioctl(node, VIDIOC_REQBUFS, &request) < 0 || request.count < BUFFERS) fail("VIDIOC_REQBUFS");
	for (int i = 0; i < BUFFERS; i++) {
		struct v4l2_buffer buffer = {.index = i, .type = V4L2_BUF_TYPE_VIDEO_OUTPUT, .memory = V4L2_MEMORY_MMAP};
		if (ioctl(node, VIDIOC_QUERYBUF, &buffer) < 0) fail("VIDIOC_QUERYBUF");
		stream.length[i] = buffer.length;
		stream.memory[i] = mmap(NULL, buffer.length, PROT_READ | PROT_WRITE, MAP_SHARED, node, buffer.m.offset);
		if (stream.memory[i] == MAP_FAILED) fail("mmap");
		stream.free_[i] = 1;
	}
	free(gray);
	gray = malloc((size_t)stream.size.width * stream.size.height);
	fprintf(logfile, "stream %s %u %u %u\n", stream.format->name, stream.size.width, stream.size.height,
		commit.dwFrameInterval);
	queue_frame(0);
	int type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
	if (ioctl(node, VIDIOC_STREAMON, &type) < 0) fail("VIDIOC_STREAMON");
	stream.on = 1;
	stream.next_ns = now_ns(CLOCK_MONOTONIC_RAW) + stream.interval_ns;
	fflush(logfile);
}

static void handle_events(void) {
	struct v4l2_event event;
	while (ioctl(node, VIDIOC_DQEVENT, &event) == 0) {
		struct uvc_event *uvc = (struct uvc_event *)&event.u.data;
		switch (event.type) {
		case UVC_EVENT_SETUP:
			answer_setup(&uvc->req);
			break;
		case UVC_EVENT_DATA: {
			if (ae_mode_set_pending) {
				ae_mode_set_pending = 0;
				if (uvc->data.length >= 1 && (uvc->data.data[0] == 1 || uvc->data.data[0] == 2))
					ae_mode = uvc->data.data[0];
				fprintf(logfile, "ae_mode %u\n", ae_mode);
				break;
			}
			if (exposure_set_pending) {
				exposure_set_pending = 0;
				uint32_t units = 0;
				memcpy(&units, uvc->data.data, uvc->data.length < 4 ? (size_t)uvc->data.length : 4);
				if (units >= 1 && units <= 10000) exposure_units = units;
				fprintf(logfile, "exposure %u\n", exposure_units);
				break;
			}
			struct uvc_streaming_control asked;
			memset(&asked, 0, sizeof(asked));
			memcpy(&asked, uvc->data.data,
			       uvc->data.length < (int)sizeof(asked) ? (size_t)uvc->data.length : sizeof(asked));
			if (last_selector == UVC_VS_PROBE_CONTROL) clamp_control(&probe, &asked);
			if (last_selector == UVC_VS_COMMIT_CONTROL) clamp_control(&commit, &asked);
			break;
		}
		case UVC_EVENT_STREAMON:
			stream_on();
			break;
		case UVC_EVENT_STREAMOFF:
			stream_off("streamoff");
			break;
		case UVC_EVENT_DISCONNECT:
			stream_off("disconnect");
			break;
		}
	}
}

static void take_back_buffers(void) {
	struct v4l2_buffer buffer;
	for (;;) {
		memset(&buffer, 0, sizeof(buffer));
		buffer.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
		buffer.memory = V4L2_MEMORY_MMAP;
		if (ioctl(node, VIDIOC_DQBUF, &buffer) < 0) return;
		stream.free_[buffer.index] = 1;
		fprintf(logfile, "sent %u %lld%s\n", stream.frame_of[buffer.index],
			(long long)now_ns(CLOCK_MONOTONIC_RAW), buffer.flags & V4L2_BUF_FLAG_ERROR ? " error" : "");
	}
}

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "--modes") == 0) {
		print_modes();
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: uvc-feeder --modes | uvc-feeder NODE LOG\n");
		return 2;
	}
	FILE *parameter = fopen("/sys/module/usb_f_uvc/parameters/bulk_max_payload", "r");
	if (!parameter || fscanf(parameter, "%u", &max_payload) != 1 || max_payload == 0) {
		fprintf(stderr, "uvc-feeder: usb_f_uvc is not loaded with bulk_max_payload (lib/uvc-gadget.sh)\n");
		return 1;
	}
	fclose(parameter);
	logfile = fopen(argv[2], "w");
	if (!logfile) fail(argv[2]);
	setvbuf(logfile, NULL, _IOLBF, 0);
	node = open(argv[1], O_RDWR | O_NONBLOCK);
	if (node < 0) fail(argv[1]);
	jpeg = tjInitCompress();
	fill_control(&probe, 0, 0, 0);
	commit = probe;
	struct sigaction action = {.sa_handler = on_signal};
	sigaction(SIGTERM, &action, NULL);
	sigaction(SIGINT, &action, NULL);
	/* SETUP last: subscribing to it connects the gadget, and the host's first requests follow. */
	const int events[] = {UVC_EVENT_CONNECT, UVC_EVENT_DISCONNECT, UVC_EVENT_STREAMON, UVC_EVENT_STREAMOFF,
			      UVC_EVENT_DATA, UVC_EVENT_SETUP};
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		struct v4l2_event_subscription subscription = {.type = events[i]};
		if (ioctl(node, VIDIOC_SUBSCRIBE_EVENT, &subscription) < 0) fail("VIDIOC_SUBSCRIBE_EVENT");
	}
	fprintf(logfile, "ready\n");
	while (!stopping) {
		int timeout = 200;
		if (stream.on) {
			int64_t wait = stream.next_ns - now_ns(CLOCK_MONOTONIC_RAW);
			timeout = wait <= 0 ? 0 : (int)((wait + 999999) / 1000000);
		}
		struct pollfd wait = {.fd = node, .events = POLLPRI | (stream.on ? POLLOUT : 0)};
		if (poll(&wait, 1, timeout) < 0 && errno != EINTR) fail("poll");
		if (wait.revents & POLLPRI) handle_events();
		if (stream.on) take_back_buffers();
		if (stream.on && now_ns(CLOCK_MONOTONIC_RAW) >= stream.next_ns) {
			int index = -1;
			for (int i = 0; i < BUFFERS && index < 0; i++)
				if (stream.free_[i]) index = i;
			if (index >= 0)
				queue_frame(index);
			else
				fprintf(logfile, "late %lld\n", (long long)now_ns(CLOCK_MONOTONIC_RAW));
			stream.next_ns += stream.interval_ns;
			/* A feeder that fell far behind (the guest paused) starts its schedule again. */
			if (now_ns(CLOCK_MONOTONIC_RAW) > stream.next_ns + 4 * stream.interval_ns)
				stream.next_ns = now_ns(CLOCK_MONOTONIC_RAW) + stream.interval_ns;
		}
	}
	stream_off("signal");
	close(node);
	return 0;
}
