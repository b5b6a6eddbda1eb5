// The general Linux seam for fieldcap's capture loops: what Glibc's Swift module does not
// export (sys/epoll.h) or exports only as macros.
#ifndef CFIELDCAPLINUX_H
#define CFIELDCAPLINUX_H

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/resource.h>
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

/// A wait on a device and the stop signal together, as an epoll set: unlike `poll`, which
/// registers with (for a camera, takes the vb2 queue's lock for) every descriptor on every call,
/// the set is registered once and the driver's wake-up marks the device ready. Returns the set's
/// descriptor, or -1 with errno set.
static inline int CFieldcapLinux_wait_set_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/// Adds `fd` to the set for input; `bit` (one bit set) names it in `CFieldcapLinux_wait_set_wait`'s
/// masks. The corresponding call is `epoll_ctl(set, EPOLL_CTL_ADD, fd, {EPOLLIN, bit})`.
static inline int CFieldcapLinux_wait_set_add(int set, int fd, uint32_t bit) {
    struct epoll_event event = {.events = EPOLLIN, .data = {.u32 = bit}};
    return epoll_ctl(set, EPOLL_CTL_ADD, fd, &event);
}

/// Waits up to `timeout_ms` (level-triggered). Returns how many descriptors are ready, 0 after the
/// time-out, -1 with errno set; `ready` gets the bits of those readable, `failed` of those that
/// report an error or a hang-up.
static inline int CFieldcapLinux_wait_set_wait(int set, int timeout_ms, uint32_t *ready, uint32_t *failed) {
    struct epoll_event events[4];
    int count = epoll_wait(set, events, 4, timeout_ms);
    *ready = 0;
    *failed = 0;
    for (int index = 0; index < count; index++) {
        if (events[index].events & EPOLLIN) *ready |= events[index].data.u32;
        if (events[index].events & (EPOLLERR | EPOLLHUP)) *failed |= events[index].data.u32;
    }
    return count;
}

#endif
