// What fieldcap needs of Linux that Glibc's Swift module does not export, or exports only as
// macros: syncfs, a thread's own nice value, accept4.
#ifndef CFIELDCAPLINUX_H
#define CFIELDCAPLINUX_H

#include <errno.h>
#include <linux/gpio.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/// Lowers the calling thread's scheduling priority to `nice` (Linux's nice is per thread): for a
/// thread whose work may wait, so that capture and writing do not. The corresponding calls are
/// `setpriority(PRIO_PROCESS, gettid(), nice)`; Glibc's Swift module has no `gettid`.
/// Syncs the filesystem holding `fd` (`syncfs(2)`, which Glibc declares only under _GNU_SOURCE):
/// one call for the thousands of files an export writes.
/// Declared here because the system headers are built as modules without _GNU_SOURCE.
extern int syncfs(int fd);
static inline int CFieldcapLinux_syncfs(int fd) { return syncfs(fd); }

static inline int CFieldcapLinux_nice_thread(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}

/// Takes the next connection on `fd`, non-blocking and closed on exec in one call (`accept4(2)`,
/// which Glibc declares only under _GNU_SOURCE): no moment where a fork inherits it.
extern int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
static inline int CFieldcapLinux_accept_nonblocking(int fd) {
    return accept4(fd, 0, 0, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

/// The user id of the process at the other end of a Unix socket (`SO_PEERCRED`, whose `struct
/// ucred` Glibc declares only under _GNU_SOURCE); -1 with errno.
struct CFieldcapLinux_ucred { int32_t pid; uint32_t uid; uint32_t gid; };
static inline int64_t CFieldcapLinux_peer_uid(int fd) {
    struct CFieldcapLinux_ucred credentials;
    socklen_t length = sizeof credentials;
#ifdef SO_PEERCRED
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
#else
    if (getsockopt(fd, SOL_SOCKET, 17 /* asm-generic SO_PEERCRED */, &credentials, &length) != 0) return -1;
#endif
    return credentials.uid;
}

/// Whether the process at the other end of a Unix socket is in group `gid`: its primary group
/// (`SO_PEERCRED`) or one of its supplementary groups (`SO_PEERGROUPS`, Linux 4.13); 1, 0, or -1
/// with errno.
static inline int CFieldcapLinux_peer_in_group(int fd, uint32_t gid) {
    struct CFieldcapLinux_ucred credentials;
    socklen_t length = sizeof credentials;
#ifdef SO_PEERCRED
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
#else
    if (getsockopt(fd, SOL_SOCKET, 17, &credentials, &length) != 0) return -1;
#endif
    if (credentials.gid == gid) return 1;
#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif
    uint32_t groups[256];
    socklen_t size = sizeof groups;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &size) != 0) return errno == ERANGE ? 0 : -1;
    for (socklen_t i = 0; i < size / sizeof groups[0]; i++) {
        if (groups[i] == gid) return 1;
    }
    return 0;
}

/// Requests line `offset` of the GPIO chip open at `chip_fd` as an input reporting rising edges
/// (the kernel's GPIO character device, uAPI v2: `GPIO_V2_GET_LINE_IOCTL`), each event stamped by
/// the kernel in CLOCK_MONOTONIC, `buffer` events held for the reader (0: the kernel's 16). Returns
/// the line's event descriptor, or -1 with errno. v2 rather than libgpiod 1.6 (Debian 12's), which
/// speaks v1 only: v1 drops the newest events silently when its 16 fill, v2 the oldest, and says
/// so in each event's sequence numbers.
static inline int CFieldcapLinux_gpio_request_rising(int chip_fd, uint32_t offset, const char *consumer,
                                                     uint32_t buffer) {
    struct gpio_v2_line_request request;
    memset(&request, 0, sizeof request);
    request.offsets[0] = offset;
    request.num_lines = 1;
    strncpy(request.consumer, consumer, GPIO_MAX_NAME_SIZE - 1);
    request.config.flags = GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING;
    request.event_buffer_size = buffer;
    if (ioctl(chip_fd, GPIO_V2_GET_LINE_IOCTL, &request) < 0) return -1;
    return request.fd;
}

/// The chip's name, label and number of lines (`GPIO_GET_CHIPINFO_IOCTL`); -1 with errno.
static inline int CFieldcapLinux_gpio_chip_info(int chip_fd, char name[32], char label[32], uint32_t *lines) {
    struct gpiochip_info info;
    memset(&info, 0, sizeof info);
    if (ioctl(chip_fd, GPIO_GET_CHIPINFO_IOCTL, &info) < 0) return -1;
    memcpy(name, info.name, 32);
    memcpy(label, info.label, 32);
    name[31] = 0;
    label[31] = 0;
    *lines = info.lines;
    return 0;
}

/// Line `offset`'s name and consumer (empty when not in use), and whether it is in use
/// (`GPIO_V2_GET_LINEINFO_IOCTL`); -1 with errno.
static inline int CFieldcapLinux_gpio_line_info(int chip_fd, uint32_t offset, char name[32], char consumer[32],
                                                int *used) {
    struct gpio_v2_line_info info;
    memset(&info, 0, sizeof info);
    info.offset = offset;
    if (ioctl(chip_fd, GPIO_V2_GET_LINEINFO_IOCTL, &info) < 0) return -1;
    memcpy(name, info.name, 32);
    memcpy(consumer, info.consumer, 32);
    name[31] = 0;
    consumer[31] = 0;
    *used = (info.flags & GPIO_V2_LINE_FLAG_USED) != 0;
    return 0;
}

/// One edge event read from a line's descriptor: 1 with the event, 0 when none is waiting
/// (EAGAIN on a non-blocking descriptor), -1 with errno. `timestamp_ns` is the kernel's
/// CLOCK_MONOTONIC at the edge; `line_seqno` counts this line's events from 1 (a gap: the kernel
/// dropped events its buffer could not hold); `rising` is 1 for a rising edge.
static inline int CFieldcapLinux_gpio_read_event(int line_fd, uint64_t *timestamp_ns, uint32_t *line_seqno,
                                                 int *rising) {
    struct gpio_v2_line_event event;
    ssize_t got = read(line_fd, &event, sizeof event);
    if (got < 0) return errno == EAGAIN ? 0 : -1;
    if (got != sizeof event) return 0;
    *timestamp_ns = event.timestamp_ns;
    *line_seqno = event.line_seqno;
    *rising = event.id == GPIO_V2_LINE_EVENT_RISING_EDGE;
    return 1;
}

#endif
