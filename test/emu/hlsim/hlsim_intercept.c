/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * libc interposition: path redirection into $HLSIM_ROOT, the fd table of
 * emulated files, ioctl/mmap dispatch. Non-emulated calls go straight to
 * the next definition (dlsym RTLD_NEXT, resolved lazily because we may be
 * called before our constructor and from the dynamic loader's early users).
 */

#include "hlsim_int.h"

#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/sysmacros.h>

#define HLSIM_PBUF 4400

static hlsim_file_t *hlsim_fdtab[HLSIM_FD_MAX];
static int           hlsim_nfds;   /* fast path: 0 => nothing emulated */

#define HLSIM_REAL(_name) \
    ({ if (hlsim_real._name == NULL) hlsim_real_init(); hlsim_real._name; })

static inline int hlsim_fd_emulated(int fd)
{
    return (fd >= 0) && (fd < HLSIM_FD_MAX) &&
           __atomic_load_n(&hlsim_nfds, __ATOMIC_RELAXED) &&
           (__atomic_load_n(&hlsim_fdtab[fd], __ATOMIC_RELAXED) != NULL);
}

hlsim_file_t *hlsim_fd_get(int fd)
{
    return ((fd >= 0) && (fd < HLSIM_FD_MAX)) ? hlsim_fdtab[fd] : NULL;
}

static void hlsim_fd_set(int fd, hlsim_file_t *f)
{
    hlsim_file_t *old = hlsim_fdtab[fd];

    __atomic_store_n(&hlsim_fdtab[fd], f, __ATOMIC_RELEASE);
    if ((old == NULL) && (f != NULL)) {
        __atomic_add_fetch(&hlsim_nfds, 1, __ATOMIC_ACQ_REL);
        hlsim_counters[HLSIM_COUNTER_OPEN_FDS]++;
    } else if ((old != NULL) && (f == NULL)) {
        __atomic_sub_fetch(&hlsim_nfds, 1, __ATOMIC_ACQ_REL);
        hlsim_counters[HLSIM_COUNTER_OPEN_FDS]--;
    }
}

void hlsim_fd_install_locked(int fd, hlsim_file_t *f)
{
    hlsim_file_t *old = hlsim_fdtab[fd];  /* fd closed behind our back */

    hlsim_fd_set(fd, NULL);
    hlsim_fd_set(fd, f);
    if (old != NULL) {
        hlsim_file_unref(old);
    }
}

int hlsim_fd_install(int fd, hlsim_file_t *f)
{
    pthread_mutex_lock(&hlsim_lock);
    hlsim_fd_install_locked(fd, f);
    pthread_mutex_unlock(&hlsim_lock);
    return 0;
}

/* With the lock held; may drop and retake it to release a context */
void hlsim_file_unref(hlsim_file_t *f)
{
    hlsim_ctx_t *ctx;

    if (--f->refcnt > 0) {
        return;
    }
    ctx = f->ctx;
    if (f->kind == HLSIM_F_DMABUF) {
        hlsim_counters[HLSIM_COUNTER_DMABUFS]--;
    }
    hlsim_notify_release(f);
    free(f);
    if (ctx != NULL) {
        pthread_mutex_unlock(&hlsim_lock);
        hlsim_ctx_release(ctx);
        pthread_mutex_lock(&hlsim_lock);
    }
}

/* this process, for process_vm_*: a syscall saved per user copy */
static pid_t            hlsim_pid;
/* top of the calling thread's stack, looked up once per thread */
static __thread uintptr_t hlsim_stack_top;

/*
 * [addr, addr + len) is in the live part of the calling thread's stack,
 * between this frame and the top: mapped and writable for sure. Ioctl
 * arguments usually are, and need no probing syscall then.
 */
static int hlsim_on_own_stack(uint64_t addr, size_t len)
{
    uintptr_t      sp = (uintptr_t)__builtin_frame_address(0);
    pthread_attr_t attr;
    void          *base;
    size_t         size;

    if (hlsim_stack_top == 0) {
        if (pthread_getattr_np(pthread_self(), &attr) != 0) {
            return 0;
        }
        if (pthread_attr_getstack(&attr, &base, &size) == 0) {
            hlsim_stack_top = (uintptr_t)base + size;
        }
        pthread_attr_destroy(&attr);
    }
    return (addr >= sp) && (addr < hlsim_stack_top) &&
           (len <= hlsim_stack_top - addr);
}

/* Access user memory like copy_{from,to}_user: bad pointers give EFAULT */
int hlsim_copy_from_user(void *dst, uint64_t src, size_t len)
{
    struct iovec l = { dst, len }, r = { (void*)(uintptr_t)src, len };

    if (len == 0) {
        return 0;
    }
    if (src == 0) {
        return -EFAULT;
    }
    if (hlsim_on_own_stack(src, len)) {
        memcpy(dst, (void*)(uintptr_t)src, len);
        return 0;
    }
    if (process_vm_readv(hlsim_pid, &l, 1, &r, 1, 0) == (ssize_t)len) {
        /* readable: copy again so memory checkers see defined data */
        memcpy(dst, (void*)(uintptr_t)src, len);
        return 0;
    }
    if ((errno == ENOSYS) || (errno == EPERM)) {
        memcpy(dst, (void*)(uintptr_t)src, len);
        return 0;
    }
    return -EFAULT;
}

int hlsim_copy_to_user(uint64_t dst, const void *src, size_t len)
{
    struct iovec l = { (void*)src, len }, r = { (void*)(uintptr_t)dst, len };

    if (len == 0) {
        return 0;
    }
    if (dst == 0) {
        return -EFAULT;
    }
    if (hlsim_on_own_stack(dst, len)) {
        memcpy((void*)(uintptr_t)dst, src, len);
        return 0;
    }
    if (process_vm_writev(hlsim_pid, &l, 1, &r, 1, 0) == (ssize_t)len) {
        memcpy((void*)(uintptr_t)dst, src, len);  /* see copy_from_user */
        return 0;
    }
    if ((errno == ENOSYS) || (errno == EPERM)) {
        memcpy((void*)(uintptr_t)dst, src, len);
        return 0;
    }
    return -EFAULT;
}

/* ---------------- open family ---------------- */

static int hlsim_do_open(int dirfd, const char *path, int flags, mode_t mode,
                         int at)
{
    char          buf[HLSIM_PBUF];
    const char   *rp;
    hlsim_fkind_t kind;
    int           dev, fd;

    if ((path != NULL) && (path[0] == '/') &&
        hlsim_node_match(path, &dev, &kind)) {
        rp = hlsim_redirect(path, buf, sizeof(buf));
        if (rp == path) {   /* already a path under the root */
            rp = path;
        }
        fd = hlsim_open_node(dev, kind, rp, flags, mode);
        if (fd < 0) {
            errno = -fd;
            return -1;
        }
        return fd;
    }
    rp = hlsim_redirect(path, buf, sizeof(buf));
    if (at) {
        return HLSIM_REAL(openat)(dirfd, rp, flags, mode);
    }
    return HLSIM_REAL(open)(rp, flags, mode);
}

#define HLSIM_MODE_ARG(_flags, _last) \
    mode_t mode = 0; \
    if (((_flags) & O_CREAT) || (((_flags) & O_TMPFILE) == O_TMPFILE)) { \
        va_list ap; \
        va_start(ap, _last); \
        mode = va_arg(ap, mode_t); \
        va_end(ap); \
    }

int open(const char *path, int flags, ...)
{
    HLSIM_MODE_ARG(flags, flags);
    return hlsim_do_open(AT_FDCWD, path, flags, mode, 0);
}

int open64(const char *path, int flags, ...)
{
    HLSIM_MODE_ARG(flags, flags);
    return hlsim_do_open(AT_FDCWD, path, flags | O_LARGEFILE, mode, 0);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    HLSIM_MODE_ARG(flags, flags);
    return hlsim_do_open(dirfd, path, flags, mode, 1);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    HLSIM_MODE_ARG(flags, flags);
    return hlsim_do_open(dirfd, path, flags | O_LARGEFILE, mode, 1);
}

int __open_2(const char *path, int flags)
{
    return hlsim_do_open(AT_FDCWD, path, flags, 0, 0);
}

int __open64_2(const char *path, int flags)
{
    return hlsim_do_open(AT_FDCWD, path, flags | O_LARGEFILE, 0, 0);
}

int __openat_2(int dirfd, const char *path, int flags)
{
    return hlsim_do_open(dirfd, path, flags, 0, 1);
}

int __openat64_2(int dirfd, const char *path, int flags)
{
    return hlsim_do_open(dirfd, path, flags | O_LARGEFILE, 0, 1);
}

/* Plain path redirection for the other path-taking calls */
#define HLSIM_WRAP_PATH(_ret, _name, _proto, _call_args, ...) \
    _ret _name _proto \
    { \
        static _ret (*real) _proto; \
        char buf[HLSIM_PBUF]; \
        if (real == NULL) { \
            real = dlsym(RTLD_NEXT, #_name); \
        } \
        path = hlsim_redirect(path, buf, sizeof(buf)); \
        return real _call_args; \
    }

HLSIM_WRAP_PATH(FILE *, fopen, (const char *path, const char *mode),
                (path, mode))
HLSIM_WRAP_PATH(FILE *, fopen64, (const char *path, const char *mode),
                (path, mode))
HLSIM_WRAP_PATH(int, access, (const char *path, int m), (path, m))
HLSIM_WRAP_PATH(int, faccessat, (int d, const char *path, int m, int f),
                (d, path, m, f))
HLSIM_WRAP_PATH(int, stat, (const char *path, struct stat *st), (path, st))
HLSIM_WRAP_PATH(int, stat64, (const char *path, struct stat64 *st),
                (path, st))
HLSIM_WRAP_PATH(int, lstat, (const char *path, struct stat *st), (path, st))
HLSIM_WRAP_PATH(int, lstat64, (const char *path, struct stat64 *st),
                (path, st))
HLSIM_WRAP_PATH(int, fstatat, (int d, const char *path, struct stat *st,
                               int f), (d, path, st, f))
HLSIM_WRAP_PATH(int, fstatat64, (int d, const char *path, struct stat64 *st,
                                 int f), (d, path, st, f))
HLSIM_WRAP_PATH(int, __xstat, (int v, const char *path, struct stat *st),
                (v, path, st))
HLSIM_WRAP_PATH(int, __xstat64, (int v, const char *path, struct stat64 *st),
                (v, path, st))
HLSIM_WRAP_PATH(int, __lxstat, (int v, const char *path, struct stat *st),
                (v, path, st))
HLSIM_WRAP_PATH(int, __lxstat64, (int v, const char *path,
                                  struct stat64 *st), (v, path, st))
HLSIM_WRAP_PATH(DIR *, opendir, (const char *path), (path))

HLSIM_WRAP_PATH(ssize_t, readlink, (const char *path, char *b, size_t n),
                (path, b, n))
HLSIM_WRAP_PATH(ssize_t, __readlink_chk, (const char *path, char *b,
                                          size_t n, size_t bl),
                (path, b, n, bl))
HLSIM_WRAP_PATH(char *, realpath, (const char *path, char *resolved),
                (path, resolved))
HLSIM_WRAP_PATH(char *, __realpath_chk, (const char *path, char *resolved,
                                         size_t rl), (path, resolved, rl))

/* ---------------- fd lifetime ---------------- */

int close(int fd)
{
    hlsim_file_t *f;
    int           rc, dmabuf_dev = -1;

    /* Release before the real close: the fd (and the flock of a compute
     * node) stays ours until the context is gone, so a new owner cannot
     * race with the cleanup. */
    if (hlsim_fd_emulated(fd)) {
        pthread_mutex_lock(&hlsim_lock);
        f = hlsim_fdtab[fd];
        hlsim_fd_set(fd, NULL);
        if (f != NULL) {
            if ((f->kind == HLSIM_F_DMABUF) && (f->refcnt == 1)) {
                dmabuf_dev = f->dev;
            }
            hlsim_file_unref(f);
        }
        pthread_mutex_unlock(&hlsim_lock);
    }
    rc = HLSIM_REAL(close)(fd);
    if (dmabuf_dev >= 0) {
        /* the last reference of this process may have been the last */
        pthread_mutex_lock(&hlsim_lock);
        hlsim_mem_prune_exports(dmabuf_dev);
        pthread_mutex_unlock(&hlsim_lock);
    }
    return rc;
}

/* Record @newfd as another reference to @oldfd's emulated file */
static void hlsim_fd_dup(int oldfd, int newfd)
{
    hlsim_file_t *f, *old;

    if ((newfd < 0) || (newfd == oldfd)) {
        return;
    }
    pthread_mutex_lock(&hlsim_lock);
    f   = hlsim_fd_get(oldfd);
    old = hlsim_fd_get(newfd);
    if (newfd >= HLSIM_FD_MAX) {
        f = NULL;   /* cannot track: behaves like a plain file */
    } else {
        hlsim_fd_set(newfd, NULL);
        if (f != NULL) {
            f->refcnt++;
            hlsim_fd_set(newfd, f);
        }
    }
    if (old != NULL) {
        hlsim_file_unref(old);   /* dup2 closed it implicitly */
    }
    pthread_mutex_unlock(&hlsim_lock);
}

int dup(int fd)
{
    int nfd = HLSIM_REAL(dup)(fd);

    if ((nfd >= 0) && hlsim_fd_emulated(fd)) {
        hlsim_fd_dup(fd, nfd);
    }
    return nfd;
}

int dup2(int fd, int nfd)
{
    int rc = HLSIM_REAL(dup2)(fd, nfd);

    if ((rc >= 0) && (hlsim_fd_emulated(fd) || hlsim_fd_emulated(nfd))) {
        hlsim_fd_dup(fd, rc);
    }
    return rc;
}

int dup3(int fd, int nfd, int flags)
{
    int rc = HLSIM_REAL(dup3)(fd, nfd, flags);

    if ((rc >= 0) && (hlsim_fd_emulated(fd) || hlsim_fd_emulated(nfd))) {
        hlsim_fd_dup(fd, rc);
    }
    return rc;
}

static int hlsim_fcntl(int fd, int cmd, va_list ap)
{
    long arg = va_arg(ap, long);  /* every fcntl arg fits in a long */
    int  rc  = HLSIM_REAL(fcntl)(fd, cmd, arg);

    if ((rc >= 0) && ((cmd == F_DUPFD) || (cmd == F_DUPFD_CLOEXEC)) &&
        hlsim_fd_emulated(fd)) {
        hlsim_fd_dup(fd, rc);
    }
    return rc;
}

int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    int     rc;

    va_start(ap, cmd);
    rc = hlsim_fcntl(fd, cmd, ap);
    va_end(ap);
    return rc;
}

int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    int     rc;

    va_start(ap, cmd);
    rc = hlsim_fcntl(fd, cmd, ap);
    va_end(ap);
    return rc;
}

/* Emulated nodes look like character devices (facts 1.3: BDF from fd) */
static void hlsim_fake_stat(int fd, struct stat *st)
{
    hlsim_file_t *f;
    int           maj = 0, min = 0;

    pthread_mutex_lock(&hlsim_lock);
    f = hlsim_fd_get(fd);
    if ((f != NULL) && (f->kind != HLSIM_F_DMABUF)) {
        if (hlsim_cfg.legacy) {
            maj = HLSIM_LEGACY_MAJOR;
            min = 2 * f->dev + (f->kind == HLSIM_F_CONTROL);
        } else {
            maj = (f->kind == HLSIM_F_COMPUTE) ? HLSIM_ACCEL_MAJOR :
                                                 HLSIM_CTL_MAJOR;
            /* a control fd's minor is the probe id that found it */
            min = (f->kind == HLSIM_F_COMPUTE) ? hlsim_accel_idx(f->dev) :
                                                 f->dev;
        }
        st->st_mode = S_IFCHR | (st->st_mode & 07777);
        st->st_rdev = makedev(maj, min);
        st->st_size = 0;
    }
    pthread_mutex_unlock(&hlsim_lock);
}

int fstat(int fd, struct stat *st)
{
    int rc = HLSIM_REAL(fstat)(fd, st);

    if ((rc == 0) && hlsim_fd_emulated(fd)) {
        hlsim_fake_stat(fd, st);
    }
    return rc;
}

int fstat64(int fd, struct stat64 *st)
{
    return fstat(fd, (struct stat*)st);  /* same layout on LP64 */
}

/* ---------------- ioctl / mmap ---------------- */

int ioctl(int fd, unsigned long req, ...)
{
    hlsim_file_t *f;
    va_list       ap;
    void         *arg;
    int           rc;

    va_start(ap, req);
    arg = va_arg(ap, void*);
    va_end(ap);
    if (!hlsim_fd_emulated(fd)) {
        return HLSIM_REAL(ioctl)(fd, req, arg);
    }
    pthread_mutex_lock(&hlsim_lock);
    f = hlsim_fd_get(fd);
    if (f == NULL) {
        pthread_mutex_unlock(&hlsim_lock);
        return HLSIM_REAL(ioctl)(fd, req, arg);
    }
    f->refcnt++;    /* keep it across a concurrent close */
    pthread_mutex_unlock(&hlsim_lock);

    rc = hlsim_ioctl(f, fd, req, arg);

    pthread_mutex_lock(&hlsim_lock);
    hlsim_file_unref(f);
    pthread_mutex_unlock(&hlsim_lock);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return rc;
}

/*
 * mmap and munmap of emulated fds. UCM's "bistro" hooks (UCX default)
 * overwrite the code of the first "mmap"/"munmap" in the process, ours,
 * and then call syscall(SYS_mmap/SYS_munmap): so these are static, called
 * from both the symbols and the syscall() interposer, never through the
 * (patched) exported symbols. A mmap that reaches neither (an inline
 * syscall instruction) still maps the CB when the root is on tmpfs: the
 * node file holds it at offset == handle; only the driver's checks are
 * skipped then.
 */
/* inside hlsim_do_mmap/munmap: a nested syscall() is the next mmap's
 * own (when UCM patched libc's instead of ours), pass it through */
static __thread int hlsim_nest __attribute__((tls_model("initial-exec")));

static void *hlsim_do_mmap_body(void *addr, size_t len, int prot, int flags,
                                int fd, off_t off);

static void *hlsim_do_mmap(void *addr, size_t len, int prot, int flags,
                           int fd, off_t off)
{
    void *p;

    hlsim_nest++;
    p = hlsim_do_mmap_body(addr, len, prot, flags, fd, off);
    hlsim_nest--;
    return p;
}

static void *hlsim_do_mmap_body(void *addr, size_t len, int prot, int flags,
                                int fd, off_t off)
{
    hlsim_file_t *f;
    void         *p;
    int           err = 0;

    if ((fd < 0) || (flags & MAP_ANONYMOUS)) {
        return HLSIM_REAL(libc_mmap)(addr, len, prot, flags, fd, off);
    }
    if (hlsim_fd_emulated(fd)) {
        pthread_mutex_lock(&hlsim_lock);
        f = hlsim_fd_get(fd);
        if ((f != NULL) && (f->kind == HLSIM_F_COMPUTE)) {
            p = hlsim_cb_mmap(f->ctx, addr, len, prot, flags, fd,
                              (uint64_t)off, &err);
            pthread_mutex_unlock(&hlsim_lock);
            if (p == NULL) {
                errno = err;
                return MAP_FAILED;
            }
            return p;
        }
        pthread_mutex_unlock(&hlsim_lock);
        if (f != NULL) {
            /* control node has no mmap; dma-buf has no mmap (facts 4.2) */
            errno = (f->kind == HLSIM_F_CONTROL) ? ENODEV : EINVAL;
            return MAP_FAILED;
        }
    } else if (hlsim_is_dmabuf_fd(fd)) {
        errno = EINVAL;   /* received from elsewhere: still no mmap */
        return MAP_FAILED;
    }
    return HLSIM_REAL(libc_mmap)(addr, len, prot, flags, fd, off);
}

static int hlsim_do_munmap(void *addr, size_t len)
{
    int rc;

    if (hlsim_nest) {
        /* back from a hook that went through libc's code again */
        return hlsim_real.munmap(addr, len);
    }
    hlsim_nest++;
    if (__atomic_load_n(&hlsim_cb_user_maps, __ATOMIC_RELAXED) &&
        hlsim_cb_munmap(addr, len)) {
        rc = 0;
    } else {
        rc = HLSIM_REAL(libc_munmap)(addr, len);
    }
    hlsim_nest--;
    return rc;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return hlsim_do_mmap(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return hlsim_do_mmap(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
    return hlsim_do_munmap(addr, len);
}

static void hlsim_route_libc_munmap(void);
static uint8_t *hlsim_libc_munmap_code;   /* libc's munmap, if routed */
static uint8_t  hlsim_munmap_orig[16];    /* our munmap's first bytes */

/* syscall(2) as UCM's bistro hooks use it for the "original" mmap/munmap.
 * Every syscall argument is register sized: forward six longs. */
long syscall(long nr, ...)
{
    long    a[6];
    va_list ap;
    int     i;

    va_start(ap, nr);
    for (i = 0; i < 6; i++) {
        a[i] = va_arg(ap, long);
    }
    va_end(ap);
    if (hlsim_nest) {
        /* fall through to the kernel */
    } else if ((nr == SYS_mmap) && ((int)a[4] >= 0) &&
               !((int)a[3] & MAP_ANONYMOUS)) {
        return (long)hlsim_do_mmap((void*)a[0], (size_t)a[1], (int)a[2],
                                   (int)a[3], (int)a[4], (off_t)a[5]);
    } else if (nr == SYS_munmap) {
        if ((hlsim_libc_munmap_code == NULL) &&
            memcmp((void*)munmap, hlsim_munmap_orig,
                   sizeof(hlsim_munmap_orig))) {
            hlsim_route_libc_munmap();   /* UCM patched ours */
        }
        return hlsim_do_munmap((void*)a[0], (size_t)a[1]);
    }
    return HLSIM_REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* ---------------- fork ---------------- */

static void hlsim_atfork_prepare(void)
{
    pthread_mutex_lock(&hlsim_lock);
}

static void hlsim_atfork_parent(void)
{
    hlsim_pin_atfork_parent();
    pthread_mutex_unlock(&hlsim_lock);
}

static void hlsim_atfork_child(void)
{
    int fd;

    hlsim_pid = getpid();
    /* The table copy is inherited; contexts become "inherited" views
     * whose release does not touch the system-wide accounting. */
    for (fd = 0; fd < HLSIM_FD_MAX && hlsim_nfds; fd++) {
        hlsim_file_t *f = hlsim_fdtab[fd];

        if ((f != NULL) && (f->ctx != NULL) && !f->ctx->inherited) {
            f->ctx->inherited = 1;
            /* the parent keeps creating CBs in the same store: new
             * ones here take handles from a range of their own */
            hlsim_cb_atfork_child(f->ctx);
        }
    }
    hlsim_cs_atfork_child();
    pthread_mutex_unlock(&hlsim_lock);
}

/*
 * glibc calls its own munmap code directly (free() of a mmapped chunk,
 * malloc trimming), not through the "munmap" symbol. Without the emulator
 * UCM's bistro hook patches that code, so those unmaps reach UCX's memory
 * events and invalidate registration caches. With the emulator preloaded,
 * UCM may find and patch our interposer instead (UCX 1.13; 1.22 patches
 * libc's): glibc's own unmaps would bypass UCM, and a cache would keep pins
 * of freed memory that no real process keeps. We learn it when UCM's hook
 * performs the original call as syscall(SYS_munmap) from outside our
 * munmap (syscall() below) and our munmap's code is no longer what it was
 * at load: then libc's munmap is made to jump to ours
 * (x86-64: "jmp *0(%rip)" + address, 14 bytes; the function is longer),
 * once; our pass-through to the kernel is hlsim_pass_munmap().
 */
static uint8_t  hlsim_libc_munmap_jmp[14];

/*
 * The pass-through of our munmap to the kernel once libc's munmap jumps to
 * ours: libc's code, if UCM has patched it since (UCX 1.22 patches libc's,
 * 1.13 ours; its hook then calls syscall(), which our nesting passes on),
 * else the raw syscall
 */
static int hlsim_pass_munmap(void *addr, size_t len)
{
    if (memcmp(hlsim_libc_munmap_code, hlsim_libc_munmap_jmp,
               sizeof(hlsim_libc_munmap_jmp))) {
        return ((int (*)(void*, size_t))(void*)hlsim_libc_munmap_code)(addr,
                                                                        len);
    }
    return hlsim_real.munmap(addr, len);
}

static void hlsim_route_libc_munmap(void)
{
#if defined(__x86_64__)
    static int routed;
    uint8_t   *jmp = hlsim_libc_munmap_jmp;
    void      *to  = (void*)munmap;
    long       psz = sysconf(_SC_PAGESIZE);
    uint8_t   *f;
    uintptr_t  pg, end;

    if (__atomic_exchange_n(&routed, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    f = dlsym(RTLD_NEXT, "munmap");

    if ((f == NULL) || (f == (uint8_t*)to)) {
        return;
    }
    jmp[0] = 0xff;
    jmp[1] = 0x25;
    memcpy(jmp + 6, &to, sizeof(to));
    pg  = (uintptr_t)f & ~(uintptr_t)(psz - 1);
    end = ((uintptr_t)f + sizeof(hlsim_libc_munmap_jmp) + psz - 1) &
          ~(uintptr_t)(psz - 1);
    if (mprotect((void*)pg, end - pg, PROT_READ | PROT_WRITE | PROT_EXEC)) {
        hlsim_log("cannot route libc's munmap through the emulator: %m; "
                  "glibc's own unmaps will miss UCX's memory hooks");
        return;
    }
    hlsim_libc_munmap_code = f;
    hlsim_real.libc_munmap = hlsim_pass_munmap;
    memcpy(f, jmp, sizeof(hlsim_libc_munmap_jmp));
    __builtin___clear_cache((char*)f,
                            (char*)f + sizeof(hlsim_libc_munmap_jmp));
    (void)mprotect((void*)pg, end - pg, PROT_READ | PROT_EXEC);
#endif
}

__attribute__((constructor)) static void hlsim_ctor(void)
{
    hlsim_real_init();
    memcpy(hlsim_munmap_orig, (void*)munmap, sizeof(hlsim_munmap_orig));
    hlsim_pin_init();
    hlsim_pid = getpid();
    pthread_atfork(hlsim_atfork_prepare, hlsim_atfork_parent,
                   hlsim_atfork_child);
}
