// libv4l2 (Debian: libv4l-dev) and the kernel's V4L2 API for fieldcap: non-variadic wrappers for
// the variadic v4l2_open/v4l2_ioctl, and real symbols for the ioctl request macros, which Swift
// cannot call or import.
#ifndef CV4L2_SHIM_H
#define CV4L2_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <libv4l2.h>
#include <linux/videodev2.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/// `open(2)` the node, then hand it to libv4l2 with format conversion off: fieldcap records the
/// device's own formats, zero-copy. Returns the descriptor, or -1 with errno set.
static inline int CV4L2_open(const char *path, int flags) {
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0) return -1;
    // Ask the kernel first: libv4l2 prints its own messages to stderr when the node is not a
    // V4L2 device, and fieldcap's error should be the only line the user sees.
    struct v4l2_capability capability;
    int result;
    do { result = ioctl(fd, VIDIOC_QUERYCAP, &capability); } while (result < 0 && errno == EINTR);
    if (result < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if (v4l2_fd_open(fd, V4L2_DISABLE_CONVERSION) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

static inline int CV4L2_close(int fd) { return v4l2_close(fd); }

/// The corresponding call is `v4l2_ioctl(fd, request, argument)`.
static inline int CV4L2_ioctl(int fd, unsigned long request, void *argument) { return v4l2_ioctl(fd, request, argument); }

/// The corresponding ioctl is `VIDIOC_QUERYCAP`.
static inline unsigned long CV4L2_VIDIOC_QUERYCAP(void) { return VIDIOC_QUERYCAP; }
/// The corresponding ioctl is `VIDIOC_ENUM_FMT`.
static inline unsigned long CV4L2_VIDIOC_ENUM_FMT(void) { return VIDIOC_ENUM_FMT; }
/// The corresponding ioctl is `VIDIOC_ENUM_FRAMESIZES`.
static inline unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES(void) { return VIDIOC_ENUM_FRAMESIZES; }
/// The corresponding ioctl is `VIDIOC_ENUM_FRAMEINTERVALS`.
static inline unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS(void) { return VIDIOC_ENUM_FRAMEINTERVALS; }

/// The corresponding ioctls are `VIDIOC_S_FMT`, `VIDIOC_S_PARM`, `VIDIOC_G_PARM`, `VIDIOC_REQBUFS`,
/// `VIDIOC_QUERYBUF`, `VIDIOC_QBUF`, `VIDIOC_DQBUF`, `VIDIOC_STREAMON`, `VIDIOC_STREAMOFF`.
static inline unsigned long CV4L2_VIDIOC_S_FMT(void) { return VIDIOC_S_FMT; }
static inline unsigned long CV4L2_VIDIOC_S_PARM(void) { return VIDIOC_S_PARM; }
static inline unsigned long CV4L2_VIDIOC_G_PARM(void) { return VIDIOC_G_PARM; }
static inline unsigned long CV4L2_VIDIOC_REQBUFS(void) { return VIDIOC_REQBUFS; }
static inline unsigned long CV4L2_VIDIOC_QUERYBUF(void) { return VIDIOC_QUERYBUF; }
static inline unsigned long CV4L2_VIDIOC_QBUF(void) { return VIDIOC_QBUF; }
static inline unsigned long CV4L2_VIDIOC_DQBUF(void) { return VIDIOC_DQBUF; }
static inline unsigned long CV4L2_VIDIOC_STREAMON(void) { return VIDIOC_STREAMON; }
static inline unsigned long CV4L2_VIDIOC_STREAMOFF(void) { return VIDIOC_STREAMOFF; }

/// The corresponding ioctls are `VIDIOC_QUERYCTRL`, `VIDIOC_G_CTRL`, `VIDIOC_S_CTRL`.
static inline unsigned long CV4L2_VIDIOC_QUERYCTRL(void) { return VIDIOC_QUERYCTRL; }
static inline unsigned long CV4L2_VIDIOC_G_CTRL(void) { return VIDIOC_G_CTRL; }
static inline unsigned long CV4L2_VIDIOC_S_CTRL(void) { return VIDIOC_S_CTRL; }
/// The corresponding C constant is `V4L2_CTRL_FLAG_NEXT_CTRL`.
static inline unsigned int CV4L2_CTRL_FLAG_NEXT_CTRL(void) { return V4L2_CTRL_FLAG_NEXT_CTRL; }

/// Memory-to-memory codecs (encoders) are driven without libv4l2, which only converts capture
/// formats: a plain `ioctl(2)`.
static inline int CV4L2_codec_ioctl(int fd, unsigned long request, void *argument) { return ioctl(fd, request, argument); }

/// The corresponding ioctls are `VIDIOC_G_FMT`, `VIDIOC_ENCODER_CMD`, `VIDIOC_SUBSCRIBE_EVENT`,
/// `VIDIOC_DQEVENT`, `VIDIOC_EXPBUF`, `VIDIOC_S_EXT_CTRLS`.
static inline unsigned long CV4L2_VIDIOC_G_FMT(void) { return VIDIOC_G_FMT; }
static inline unsigned long CV4L2_VIDIOC_ENCODER_CMD(void) { return VIDIOC_ENCODER_CMD; }
static inline unsigned long CV4L2_VIDIOC_SUBSCRIBE_EVENT(void) { return VIDIOC_SUBSCRIBE_EVENT; }
static inline unsigned long CV4L2_VIDIOC_DQEVENT(void) { return VIDIOC_DQEVENT; }
static inline unsigned long CV4L2_VIDIOC_EXPBUF(void) { return VIDIOC_EXPBUF; }
static inline unsigned long CV4L2_VIDIOC_S_EXT_CTRLS(void) { return VIDIOC_S_EXT_CTRLS; }
/// The corresponding ioctls are `VIDIOC_G_SELECTION` and `VIDIOC_S_SELECTION` (an encoder's
/// visible rectangle inside its aligned picture).
static inline unsigned long CV4L2_VIDIOC_G_SELECTION(void) { return VIDIOC_G_SELECTION; }
static inline unsigned long CV4L2_VIDIOC_S_SELECTION(void) { return VIDIOC_S_SELECTION; }

/// The corresponding call is `v4l2_mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset)`.
static inline void *CV4L2_mmap(int fd, size_t length, int64_t offset) {
    return v4l2_mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
}
static inline int CV4L2_munmap(void *start, size_t length) { return v4l2_munmap(start, length); }

#endif
