// What fieldcap needs of Linux that Glibc's Swift module does not export, or exports only as
// macros: syncfs, a thread's own nice value, accept4.
#ifndef CFIELDCAPLINUX_H
#define CFIELDCAPLINUX_H

#include <stdint.h>
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

#endif
