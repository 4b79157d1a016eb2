/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Configuration, node directory creation, shared device state.
 */

#include "hlsim_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/file.h>
#include <sys/mman.h>

hlsim_config_t  hlsim_cfg;
hlsim_shm_t    *hlsim_shm;
hlsim_real_t    hlsim_real;
pthread_mutex_t hlsim_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t  hlsim_cond;
int64_t         hlsim_counters[HLSIM_COUNTER_LAST];

static pthread_once_t hlsim_once = PTHREAD_ONCE_INIT;
static int            hlsim_init_status = -EAGAIN;
static uint8_t       *hlsim_hbm_base[HLSIM_MAX_DEV];
static char           hlsim_root_buf[4096];
static pthread_once_t hlsim_root_once = PTHREAD_ONCE_INIT;

static void *hlsim_sys_mmap(void *addr, size_t len, int prot, int flags,
                            int fd, off_t off)
{
    return (void*)hlsim_real.syscall(SYS_mmap, addr, len, prot, flags, fd,
                                     off);
}

static int hlsim_sys_munmap(void *addr, size_t len)
{
    return (int)hlsim_real.syscall(SYS_munmap, addr, len);
}

void hlsim_real_init(void)
{
    /* Lazy: may run before our constructor, from any interposed call */
#define HLSIM_SYM(_n) \
    if (hlsim_real._n == NULL) { \
        hlsim_real._n = dlsym(RTLD_NEXT, #_n); \
    }
    HLSIM_SYM(open);
    HLSIM_SYM(openat);
    HLSIM_SYM(close);
    HLSIM_SYM(ioctl);
    HLSIM_SYM(dup);
    HLSIM_SYM(dup2);
    HLSIM_SYM(dup3);
    HLSIM_SYM(fcntl);
    HLSIM_SYM(fstat);
    HLSIM_SYM(readlink);
    HLSIM_SYM(syscall);
#undef HLSIM_SYM
    if (hlsim_real.libc_mmap == NULL) {
        hlsim_real.libc_mmap = dlsym(RTLD_NEXT, "mmap");
    }
    if (hlsim_real.libc_munmap == NULL) {
        hlsim_real.libc_munmap = dlsym(RTLD_NEXT, "munmap");
    }
    hlsim_real.mmap   = hlsim_sys_mmap;
    hlsim_real.munmap = hlsim_sys_munmap;
}

void hlsim_log(const char *fmt, ...)
{
    char    buf[512];
    va_list ap;
    int     n;

    n = snprintf(buf, sizeof(buf), "hlsim[%d]: ", (int)getpid());
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
    va_end(ap);
    n = strlen(buf);
    buf[n++] = '\n';
    if (write(2, buf, n) < 0) {
        /* nothing to do about a closed stderr */
    }
}

uint64_t hlsim_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int hlsim_parse_size(const char *s, uint64_t *out)
{
    char              *end;
    unsigned long long v;

    errno = 0;
    v     = strtoull(s, &end, 0);
    if (errno || end == s) {
        return -EINVAL;
    }
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    case 't': case 'T': v <<= 40; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'B') {
        end += (*end == 'i') && (end[1] == 'B') ? 2 : 1;
    }
    if (*end != '\0') {
        return -EINVAL;
    }
    *out = v;
    return 0;
}

static void hlsim_root_compute(void)
{
    const char *r = getenv("HLSIM_ROOT");

    if ((r != NULL) && (*r != '\0')) {
        snprintf(hlsim_root_buf, sizeof(hlsim_root_buf), "%s", r);
    } else {
        snprintf(hlsim_root_buf, sizeof(hlsim_root_buf), "/tmp/hlsim-%u",
                 (unsigned)getuid());
    }
    /* no trailing slash: prefix comparisons depend on it */
    while ((strlen(hlsim_root_buf) > 1) &&
           (hlsim_root_buf[strlen(hlsim_root_buf) - 1] == '/')) {
        hlsim_root_buf[strlen(hlsim_root_buf) - 1] = '\0';
    }
}

const char *hlsim_root_path(void)
{
    pthread_once(&hlsim_root_once, hlsim_root_compute);
    return hlsim_root_buf;
}

static int hlsim_asic_parse(const char *s)
{
    if (!strcasecmp(s, "gaudi1") || !strcasecmp(s, "gaudi")) {
        return HLSIM_GAUDI1;
    } else if (!strcasecmp(s, "gaudi2")) {
        return HLSIM_GAUDI2;
    } else if (!strcasecmp(s, "gaudi3")) {
        return HLSIM_GAUDI3;
    }
    return -EINVAL;
}

static const char *hlsim_asic_name(int asic)
{
    return (asic == HLSIM_GAUDI1) ? "gaudi1" :
           (asic == HLSIM_GAUDI2) ? "gaudi2" : "gaudi3";
}

/* Layout of one device model: facts 2.3 and 3.4 */
static int hlsim_devcfg_derive(int idx, hlsim_devcfg_t *d)
{
    uint64_t npages;

    d->bus = 0x10 + 7 * idx;
    if (d->asic == HLSIM_GAUDI1) {
        /* 2 MiB pages, user DRAM from physical 0x20000000, no DMMU */
        d->device_id     = GAUDI_HL_PCI_ID_GAUDI1;
        d->page_size     = HLSIM_HUGE_PAGE;
        d->dram_user_off = 0x20000000ULL;
        if (d->hbm_size < d->dram_user_off + d->page_size) {
            return -EINVAL;
        }
        d->dram_size      = HLSIM_ALIGN_DOWN(d->hbm_size - d->dram_user_off,
                                             d->page_size);
        d->dram_phys_base = 0;
        d->dram_base      = d->dram_user_off;
        d->dram_va_start  = 0;
        d->dram_va_end    = 0;
        d->dmmu_page      = 0;
        d->host_va_start  = 0x1000000000000ULL;
        d->host_va_end    = 0x27FC000000000ULL;
        d->huge_va_start  = d->host_va_start;  /* shared range */
        d->huge_va_end    = d->host_va_end;
        d->sram_base      = 0x7FF0000080ULL;
        d->sram_size      = (20 << 20) - 0x80;
        d->max_pending    = GAUDI_HL_GAUDI1_MAX_PENDING_CS;
        return 0;
    }

    if ((d->page_size == 0) || (d->page_size % HLSIM_PAGE_SIZE) ||
        (d->hbm_size < 2 * d->page_size)) {
        return -EINVAL;
    }
    npages           = (d->hbm_size + d->page_size - 1) / d->page_size;
    d->dram_user_off = d->page_size;      /* first page reserved */
    d->dram_size     = HLSIM_ALIGN_DOWN(d->hbm_size - d->page_size,
                                        d->page_size);
    d->dmmu_page     = 1ULL << 30;
    if (d->asic == HLSIM_GAUDI2) {
        d->device_id      = GAUDI_HL_PCI_ID_GAUDI2;
        d->dram_phys_base = 0x1001000000000000ULL;
        d->dram_va_end    = 0x1002000000000000ULL;
        d->host_va_start  = 0xFFF0000000000000ULL;
        d->host_va_end    = 0xFFF0800000000000ULL;
        d->huge_va_start  = 0xFFF0800000000000ULL;
        d->huge_va_end    = 0xFFF1000000000000ULL;
        d->sram_base      = 0x1000FFFFFD000000ULL;
        d->sram_size      = 50 << 20;
        d->max_pending    = GAUDI_HL_GAUDI2_MAX_PENDING_CS;
    } else {
        /* Gaudi3 model (HAB gaudi3P.h): HBM VA ends at 0x0202000000000000 */
        d->device_id      = GAUDI_HL_PCI_ID_GAUDI3;
        d->dram_phys_base = 0x0200000000000000ULL;
        d->dram_va_end    = 0x0202000000000000ULL;
        d->host_va_start  = 0xFF70000000000000ULL;
        d->host_va_end    = 0xFF70800000000000ULL;
        d->huge_va_start  = 0xFFF0000000000000ULL;
        d->huge_va_end    = 0xFFF0800000000000ULL;
        d->sram_base      = 0;
        d->sram_size      = 0;
        d->max_pending    = GAUDI_HL_GAUDI2_MAX_PENDING_CS;
    }
    /* DRAM VA range starts after the physical range (facts 3.4) */
    d->dram_va_start = d->dram_phys_base + d->page_size * npages;
    d->dram_base     = d->dram_va_start;
    if (d->page_size & (d->page_size - 1)) {
        /* a page that is not a power of two: VA blocks of whole pages
         * packed from the start, and the range ends a page per GiB of
         * the space after it (K612 gaudi2/gaudi2.c:2373-2377,
         * common/memory.c:605-640, 2709-2710) */
        d->dmmu_page   = d->page_size;
        d->dram_va_end = d->dram_va_start + d->page_size *
                         ((d->dram_va_end - d->dram_va_start) >> 30);
    }
    return 0;
}

static int hlsim_env_int(const char *name, long def, long min, long max,
                         long *out)
{
    const char *s = getenv(name);
    char       *end;
    long        v;

    if ((s == NULL) || (*s == '\0')) {
        *out = def;
        return 0;
    }
    v = strtol(s, &end, 0);
    if ((*end != '\0') || (v < min) || (v > max)) {
        hlsim_log("bad %s='%s'", name, s);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

/*
 * HLSIM_NUMA_NODE: comma list of the devices' PCI numa_node, the last value
 * repeating ("0,1": one device per socket); default -1 (no node). Only the
 * sysfs files record it: it matters when the node is created.
 */
static int hlsim_numa_from_env(hlsim_config_t *c)
{
    const char *s = getenv("HLSIM_NUMA_NODE");
    long        node = -1;
    char       *end;
    int         i;

    for (i = 0; i < HLSIM_MAX_DEV; i++) {
        if ((s != NULL) && *s) {
            node = strtol(s, &end, 0);
            if ((end == s) || (node < -1) || (node > 1023) ||
                ((*end != ',') && (*end != '\0'))) {
                hlsim_log("bad HLSIM_NUMA_NODE");
                return -EINVAL;
            }
            s = (*end == ',') ? end + 1 : end;
        }
        c->dev[i].numa_node = node;
    }
    return 0;
}

/*
 * An ASIC's real HBM size, the default of HLSIM_HBM_SIZE: Gaudi1 32 GiB
 * (K612 gaudi/gaudi.c:598, gaudi/gaudiP.h:49); Gaudi2 6 HBMs x 16 GiB
 * (gaudi2/gaudi2.c:2346); Gaudi3 2 dies x 4 HBMs x 16 GiB (facts 3.4,
 * HAB gaudi3/gaudi3P.h)
 */
static uint64_t hlsim_asic_hbm(int asic)
{
    return (asic == HLSIM_GAUDI1) ? (32ULL << 30) :
           (asic == HLSIM_GAUDI2) ? (96ULL << 30) : (128ULL << 30);
}

/*
 * An ASIC's real DRAM page, the default of HLSIM_DRAM_PAGE_SIZE: Gaudi2
 * 16 x 6 HBMs x 8 MiB = 768 MiB (K612 gaudi2/gaudi2.c:2343-2345); Gaudi3
 * 64 MiB, HAB's largest "small" HMMU page (its dram_page_size was not
 * read: facts 3.4). Gaudi1 ignores it (always 2 MiB).
 */
static uint64_t hlsim_asic_page(int asic)
{
    return (asic == HLSIM_GAUDI2) ? (768ULL << 20) : (64ULL << 20);
}

/* Build the node config from the environment */
static int hlsim_config_from_env(hlsim_config_t *c)
{
    const char *s;
    char        name[64];
    uint64_t    hbm = 0, page = 0;   /* 0: the ASIC's real one */
    long        v;
    int         asic = HLSIM_GAUDI2, i;

    if (hlsim_env_int("HLSIM_NUM_DEVICES", 2, 0, HLSIM_MAX_DEV, &v)) {
        return -EINVAL;
    }
    c->num_dev = v;
    s          = getenv("HLSIM_NODES");
    c->legacy  = (s != NULL) && !strcasecmp(s, "legacy");
    if ((s != NULL) && *s && !c->legacy && strcasecmp(s, "accel")) {
        hlsim_log("bad HLSIM_NODES='%s'", s);
        return -EINVAL;
    }
    s         = getenv("HLSIM_FLAVOUR");
    c->habana = (s == NULL) || !*s || !strcasecmp(s, "habana");
    if (!c->habana && strcasecmp(s, "upstream")) {
        hlsim_log("bad HLSIM_FLAVOUR='%s'", s);
        return -EINVAL;
    }
    /* misc-era nodes are the upstream Linux 6.1/6.2 driver (no op 99) */
    if (c->legacy && c->habana) {
        if ((s != NULL) && *s) {
            hlsim_log("HLSIM_NODES=legacy is the upstream Linux 6.1 driver: "
                      "HLSIM_FLAVOUR=%s needs accel nodes", s);
            return -EINVAL;
        }
        c->habana = 0;
    }
    if ((s = getenv("HLSIM_ASIC")) && *s &&
        ((asic = hlsim_asic_parse(s)) < 0)) {
        hlsim_log("bad HLSIM_ASIC='%s'", s);
        return -EINVAL;
    }
    if ((s = getenv("HLSIM_HBM_SIZE")) && *s && hlsim_parse_size(s, &hbm)) {
        hlsim_log("bad HLSIM_HBM_SIZE='%s'", s);
        return -EINVAL;
    }
    if ((s = getenv("HLSIM_DRAM_PAGE_SIZE")) && *s &&
        hlsim_parse_size(s, &page)) {
        hlsim_log("bad HLSIM_DRAM_PAGE_SIZE='%s'", s);
        return -EINVAL;
    }
    if (hlsim_env_int("HLSIM_ACCEL_BASE", 0, 0, HLSIM_MAX_DEV, &v)) {
        return -EINVAL;
    }
    c->accel_base = c->legacy ? 0 : v;
    if ((s = getenv("HLSIM_DRAM_BAR_SIZE")) && *s &&
        hlsim_parse_size(s, &c->dram_bar)) {
        hlsim_log("bad HLSIM_DRAM_BAR_SIZE='%s'", s);
        return -EINVAL;
    }
    if (hlsim_numa_from_env(c)) {
        return -EINVAL;
    }
    s = getenv("HLSIM_MODULE_IDS");
    for (i = 0; i < c->num_dev; i++) {
        hlsim_devcfg_t *d = &c->dev[i];

        snprintf(name, sizeof(name), "HLSIM_ASIC_%d", i);
        d->asic = asic;
        if (getenv(name) && *getenv(name) &&
            ((d->asic = hlsim_asic_parse(getenv(name))) < 0)) {
            hlsim_log("bad %s", name);
            return -EINVAL;
        }
        d->hbm_size  = hbm ? hbm : hlsim_asic_hbm(d->asic);
        d->page_size = page ? page : hlsim_asic_page(d->asic);
        d->module_id = i;
        if ((s != NULL) && *s) {
            char *end;

            d->module_id = strtoul(s, &end, 0);
            if ((end == s) || ((*end != ',') && (*end != '\0'))) {
                hlsim_log("bad HLSIM_MODULE_IDS");
                return -EINVAL;
            }
            s = (*end == ',') ? end + 1 : end;
        }
    }
    return 0;
}

static void hlsim_config_write(FILE *f, const hlsim_config_t *c)
{
    int i;

    fprintf(f, "num_devices=%d\nnodes=%s\nflavour=%s\ndram_bar=%llu\n"
            "accel_base=%d\n", c->num_dev, c->legacy ? "legacy" : "accel",
            c->habana ? "habana" : "upstream",
            (unsigned long long)c->dram_bar, c->accel_base);
    for (i = 0; i < c->num_dev; i++) {
        fprintf(f, "dev%d=%s,%llu,%llu,%u\n", i,
                hlsim_asic_name(c->dev[i].asic),
                (unsigned long long)c->dev[i].hbm_size,
                (unsigned long long)c->dev[i].page_size,
                c->dev[i].module_id);
    }
}

static int hlsim_config_read(const char *path, hlsim_config_t *c)
{
    FILE              *f = fopen(path, "re");
    char               line[256], asic[16], nodes[16], flav[16];
    unsigned long long hbm, page;
    unsigned           mod;
    int                i, n = 0;

    if (f == NULL) {
        return -errno;
    }
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "num_devices=%d", &c->num_dev) == 1) {
            n++;
        } else if (sscanf(line, "nodes=%15s", nodes) == 1) {
            c->legacy = !strcmp(nodes, "legacy");
        } else if (sscanf(line, "flavour=%15s", flav) == 1) {
            c->habana = !strcmp(flav, "habana");
        } else if (sscanf(line, "dram_bar=%llu", &hbm) == 1) {
            c->dram_bar = hbm;
        } else if (sscanf(line, "accel_base=%d", &i) == 1) {
            c->accel_base = i;
        } else if ((sscanf(line, "dev%d=%15[^,],%llu,%llu,%u", &i, asic,
                           &hbm, &page, &mod) == 5) &&
                   (i >= 0) && (i < HLSIM_MAX_DEV)) {
            c->dev[i].asic      = hlsim_asic_parse(asic);
            c->dev[i].hbm_size  = hbm;
            c->dev[i].page_size = page;
            c->dev[i].module_id = mod;
        }
    }
    fclose(f);
    return (n == 1) && (c->num_dev >= 0) && (c->num_dev <= HLSIM_MAX_DEV) ?
           0 : -EINVAL;
}

static int hlsim_config_same(const hlsim_config_t *a, const hlsim_config_t *b)
{
    int i;

    if ((a->num_dev != b->num_dev) || (a->legacy != b->legacy) ||
        (a->habana != b->habana) || (a->dram_bar != b->dram_bar) ||
        (a->accel_base != b->accel_base)) {
        return 0;
    }
    for (i = 0; i < a->num_dev; i++) {
        if ((a->dev[i].asic != b->dev[i].asic) ||
            (a->dev[i].hbm_size != b->dev[i].hbm_size) ||
            ((a->dev[i].asic != HLSIM_GAUDI1) &&
             (a->dev[i].page_size != b->dev[i].page_size)) ||
            (a->dev[i].module_id != b->dev[i].module_id)) {
            return 0;
        }
    }
    return 1;
}

static int hlsim_shm_open(int create)
{
    char path[4200];
    int  fd;

    snprintf(path, sizeof(path), "%s/state", hlsim_cfg.root);
    fd = hlsim_real.open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0),
                         0666);
    if (fd < 0) {
        return -errno;
    }
    if (create && ftruncate(fd, sizeof(hlsim_shm_t))) {
        hlsim_real.close(fd);
        return -errno;
    }
    hlsim_shm = hlsim_real.mmap(NULL, sizeof(hlsim_shm_t),
                                PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    hlsim_real.close(fd);
    if (hlsim_shm == MAP_FAILED) {
        hlsim_shm = NULL;
        return -ENOMEM;
    }
    if (create) {
        memset(hlsim_shm, 0, sizeof(*hlsim_shm));
        hlsim_shm->num_dev = hlsim_cfg.num_dev;
        __atomic_store_n(&hlsim_shm->magic, HLSIM_SHM_MAGIC,
                         __ATOMIC_RELEASE);
    } else if (hlsim_shm->magic != HLSIM_SHM_MAGIC) {
        return -EINVAL;
    }
    return 0;
}

void hlsim_cond_init(void)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&hlsim_cond, &ca);
    pthread_condattr_destroy(&ca);
}

static int hlsim_do_init(void)
{
    hlsim_config_t      envc;
    char                path[4200], tmp[4200];
    const char         *s;
    FILE               *f;
    long                v;
    int                 lfd, rc, i;

    hlsim_real_init();
    hlsim_cond_init();

    snprintf(hlsim_cfg.root, sizeof(hlsim_cfg.root), "%s", hlsim_root_path());
    memset(&envc, 0, sizeof(envc));
    rc = hlsim_config_from_env(&envc);
    if (rc) {
        return rc;
    }
    hlsim_cfg.reset_ms = 200;
    if (!hlsim_env_int("HLSIM_RESET_MS", 200, 0, 3600000, &v)) {
        hlsim_cfg.reset_ms = v;
    }
    /* Gaudi2/3 reset after every release (facts 9.8); a small default */
    hlsim_cfg.release_reset_ms = 300;
    if (!hlsim_env_int("HLSIM_RELEASE_RESET_MS", 300, 0, 3600000, &v)) {
        hlsim_cfg.release_reset_ms = v;
    }
    /* the driver gives fd holders 1 s to close before SIGKILL */
    hlsim_cfg.kill_delay_ms = 1000;
    if (!hlsim_env_int("HLSIM_KILL_DELAY_MS", 1000, 0, 3600000, &v)) {
        hlsim_cfg.kill_delay_ms = v;
    }

    if ((s = getenv("HLSIM_DMA_GBPS")) && *s) {
        hlsim_cfg.dma_gbps = strtod(s, NULL);
    }
    if (!hlsim_env_int("HLSIM_DMA_JOB_NS", 0, 0, 1000000000, &v)) {
        hlsim_cfg.dma_job_ns = v;
    }
    if (!hlsim_env_int("HLSIM_DRM", 1, 0, 1, &v)) {
        hlsim_cfg.no_drm = !v;
    }
    if (!hlsim_env_int("HLSIM_ENGINE_CLOCK", 0, 0, 1, &v)) {
        hlsim_cfg.engine_clock = v;
    }
    hlsim_cfg.verbose = getenv("HLSIM_VERBOSE") && atoi(getenv("HLSIM_VERBOSE"));
    /* the CS of a page fault that resets: completed before the reset
     * (default) or aborted by it (hlsim_dma.c hlsim_fault_outcome) */
    if ((s = getenv("HLSIM_PAGE_FAULT_CS")) && *s) {
        hlsim_cfg.pf_cs_aborted = !strcmp(s, "aborted");
        if (strcmp(s, "aborted") && strcmp(s, "completed")) {
            hlsim_log("HLSIM_PAGE_FAULT_CS=%s: want completed or aborted; "
                      "using completed", s);
        }
    }
    /* when a page fault's notifier events reach the user: at the fault,
     * or (default) after WAIT_CS reported its CS (hlsim_notify.c) */
    hlsim_cfg.pf_event_after = 1;
    hlsim_cfg.pf_event_us    = 1000;
    if ((s = getenv("HLSIM_PAGE_FAULT_EVENT")) && *s) {
        hlsim_cfg.pf_event_after = strcmp(s, "before") != 0;
        if (strcmp(s, "before") && strcmp(s, "after")) {
            hlsim_log("HLSIM_PAGE_FAULT_EVENT=%s: want before or after; "
                      "using after", s);
        }
    }
    if (!hlsim_env_int("HLSIM_PAGE_FAULT_EVENT_US", 1000, 0, 10000000,
                       &v)) {
        hlsim_cfg.pf_event_us = v;
    }
    if ((s = getenv("HLSIM_PAGE_FAULT")) && *s) {
        if (!strcmp(s, "stall")) {
            hlsim_cfg.page_fault = HLSIM_PF_STALL;
        } else if (!strcmp(s, "drop")) {
            hlsim_cfg.page_fault = HLSIM_PF_DROP;
        } else if (strcmp(s, "reset")) {
            hlsim_log("HLSIM_PAGE_FAULT=%s: want reset, stall or drop; "
                      "using reset", s);
        }
    }
    /* the driver's timeout_locked module parameter, in seconds */
    if (!hlsim_env_int("HLSIM_TIMEOUT_LOCKED", 0, 0, 3600, &v)) {
        hlsim_cfg.timeout_locked = v;
    }

    if (mkdir(hlsim_cfg.root, 0777) && (errno != EEXIST)) {
        rc = -errno;
        hlsim_log("cannot create HLSIM_ROOT %s: %m", hlsim_cfg.root);
        return rc;
    }
    /* Concurrent first users agree through this lock */
    snprintf(path, sizeof(path), "%s/.lock", hlsim_cfg.root);
    lfd = hlsim_real.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if ((lfd < 0) || flock(lfd, LOCK_EX)) {
        rc = -errno;
        hlsim_log("cannot lock %s: %m", path);
        return rc;
    }
    snprintf(path, sizeof(path), "%s/config", hlsim_cfg.root);
    if (access(path, F_OK) == 0) {
        rc = hlsim_config_read(path, &hlsim_cfg);
        if (rc == 0) {
            if (!hlsim_config_same(&hlsim_cfg, &envc)) {
                hlsim_log("HLSIM_* environment differs from the node in %s;"
                          " using the recorded config", hlsim_cfg.root);
            }
            rc = hlsim_shm_open(0);
        }
        if (rc == 0) {
            rc = hlsim_node_boot_id();
        }
    } else {
        hlsim_cfg.num_dev = envc.num_dev;
        hlsim_cfg.legacy   = envc.legacy;
        hlsim_cfg.habana   = envc.habana;
        hlsim_cfg.dram_bar   = envc.dram_bar;
        hlsim_cfg.accel_base = envc.accel_base;
        memcpy(hlsim_cfg.dev, envc.dev, sizeof(envc.dev));
        for (i = 0; i < hlsim_cfg.num_dev; i++) {
            if (hlsim_devcfg_derive(i, &hlsim_cfg.dev[i])) {
                hlsim_log("bad size/page config for device %d", i);
                rc = -EINVAL;
                goto out;
            }
        }
        rc = hlsim_shm_open(1);
        if (rc == 0) {
            rc = hlsim_node_create();
        }
        if (rc == 0) {
            rc = hlsim_node_boot_id();
        }
        if (rc == 0) {
            snprintf(tmp, sizeof(tmp), "%s/config.tmp", hlsim_cfg.root);
            f = fopen(tmp, "we");
            if (f == NULL) {
                rc = -errno;
                goto out;
            }
            hlsim_config_write(f, &hlsim_cfg);
            fclose(f);
            rc = rename(tmp, path) ? -errno : 0;
        }
    }
    for (i = 0; (rc == 0) && (i < hlsim_cfg.num_dev); i++) {
        if (hlsim_devcfg_derive(i, &hlsim_cfg.dev[i])) {
            rc = -EINVAL;
        }
    }
out:
    flock(lfd, LOCK_UN);
    hlsim_real.close(lfd);
    if (rc) {
        hlsim_log("initialisation of %s failed: %s", hlsim_cfg.root,
                  strerror(-rc));
        return rc;
    }
    if ((s = getenv("HLSIM_FAULTS")) && *s) {
        hlsim_fault_env(s);
    }
    return 0;
}

static void hlsim_init_once(void)
{
    hlsim_init_status = hlsim_do_init();
}

int hlsim_init(void)
{
    pthread_once(&hlsim_once, hlsim_init_once);
    return hlsim_init_status;
}

unsigned hlsim_dev_status(int dev)
{
    hlsim_shdev_t *sd = &hlsim_shm->dev[dev];
    unsigned       st = __atomic_load_n(&sd->status, __ATOMIC_ACQUIRE);
    uint64_t       until;

    if ((st == GAUDI_HL_DEVICE_STATUS_IN_RESET) ||
        (st == GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE)) {
        until = __atomic_load_n(&sd->reset_until_ns, __ATOMIC_ACQUIRE);
        /* The reset ends lazily: whoever looks first after the deadline */
        if ((until != 0) && (hlsim_now_ns() >= until) &&
            __atomic_compare_exchange_n(&sd->status, &st,
                                        GAUDI_HL_DEVICE_STATUS_OPERATIONAL,
                                        0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&sd->reset_until_ns, 0, __ATOMIC_RELEASE);
            hlsim_node_write_status(dev, GAUDI_HL_DEVICE_STATUS_OPERATIONAL);
            st = GAUDI_HL_DEVICE_STATUS_OPERATIONAL;
        }
    }
    return st;
}

/* IN_DEVICE_CREATION counts as operational (K612 common/device.c:397-417) */
int hlsim_dev_operational(int dev)
{
    unsigned st = hlsim_dev_status(dev);

    return (st == GAUDI_HL_DEVICE_STATUS_OPERATIONAL) ||
           (st == GAUDI_HL_DEVICE_STATUS_IN_DEVICE_CREATION);
}

void hlsim_dev_set_status(int dev, unsigned status, uint64_t until_ns)
{
    hlsim_shdev_t *sd = &hlsim_shm->dev[dev];

    __atomic_store_n(&sd->reset_until_ns, until_ns, __ATOMIC_RELEASE);
    __atomic_store_n(&sd->status, status, __ATOMIC_RELEASE);
    hlsim_node_write_status(dev, status);
}

/*
 * A CS timeout under reset_on_lockup=0 only marks the device as needing a
 * reset (K612 common/command_submission.c:838-842, K61 :818-822): NEEDS_RESET
 * is not operational (K612 common/device.c:384-385, 407-411), so ioctls
 * give EBUSY and opens EPERM, until a reset ends (needs_reset cleared at the
 * end of every successful reset, K612 device.c:1970, K61 :1671), e.g. the
 * reset upon release of Gaudi2/3. On Gaudi1, whose idle device is not reset
 * on release, it stays until the administrator resets the device.
 */
void hlsim_dev_needs_reset(int dev)
{
    hlsim_shdev_t *sd = &hlsim_shm->dev[dev];
    unsigned       st = GAUDI_HL_DEVICE_STATUS_OPERATIONAL;

    if (__atomic_compare_exchange_n(&sd->status, &st,
                                    GAUDI_HL_DEVICE_STATUS_NEEDS_RESET, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        hlsim_node_write_status(dev, GAUDI_HL_DEVICE_STATUS_NEEDS_RESET);
        hlsim_log("dev%d: CS timeout without reset_on_lockup: device needs "
                  "a reset", dev);
    }
}

static void hlsim_sleep_until(uint64_t until_ns)
{
    uint64_t now;

    while ((now = hlsim_now_ns()) < until_ns) {
        usleep((until_ns - now) / 1000 + 1);
    }
}

/*
 * Hard reset: the driver kills every process that still holds the compute
 * fd after giving it a second to close it (K612 common/device.c:1423-1470,
 * called at :1766-1772), then resets the device, which frees its memory.
 * The opener is killed (hpriv->taskpid), not processes that inherited it.
 */
static void hlsim_reset_kill(int dev, uint64_t kill_ns, pid_t closer)
{
    hlsim_shdev_t *sd = &hlsim_shm->dev[dev];
    pid_t          pid;
    int            i;

    hlsim_sleep_until(kill_ns);
    if (closer > 0) {
        /* closed with a CB still mapped: still on the driver's list */
        hlsim_log("dev%d: hard reset: killing pid=%d, which closed the "
                  "device with a CB still mapped", dev, (int)closer);
        kill(closer, SIGKILL);
        return;
    }
    pid = __atomic_load_n(&sd->owner_pid, __ATOMIC_ACQUIRE);
    if ((pid <= 0) || !hlsim_node_compute_held(dev)) {
        return;
    }
    hlsim_log("dev%d: hard reset: killing user process pid=%d", dev,
              (int)pid);
    /* the killed process never closes: the reset frees its context (we
     * may be that process, so before the kill) */
    __atomic_store_n(&sd->owner_pid, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&sd->dram_used, 0, __ATOMIC_RELEASE);
    kill(pid, SIGKILL);
    for (i = 0; (i < 500) && hlsim_node_compute_held(dev); i++) {
        usleep(10000);
    }
    __atomic_store_n(&sd->compute_active, 0, __ATOMIC_RELEASE);
}

/* Size of device @a dev's DRAM PCI BAR (BAR 4): HLSIM_DRAM_BAR_SIZE, or
 * the power of two that covers the HBM, as BARs are */
uint64_t hlsim_dram_bar_size(int dev)
{
    uint64_t bar = 1;

    if (hlsim_cfg.dram_bar != 0) {
        return hlsim_cfg.dram_bar;
    }
    while (bar < hlsim_cfg.dev[dev].hbm_size) {
        bar <<= 1;
    }
    return bar;
}

/* Driver parameter reset_on_lockup (K612 common/habanalabs_drv.c:42, 50-52);
 * read when a CS times out, so that a test can change it */
int hlsim_reset_on_lockup(void)
{
    const char *s = getenv("HLSIM_RESET_ON_LOCKUP");

    return (s == NULL) || strcmp(s, "0");
}

/*
 * CS timeout (TDR) of device @a dev in seconds: the driver's
 * timeout_locked parameter, default 30 s, which Gaudi1 replaces by 600 s
 * when it is left at its default (K612 common/habanalabs_drv.c:38-39,
 * 359-366; K61 common/habanalabs_drv.c:33-36, 326-327)
 */
unsigned hlsim_timeout_locked_s(int dev)
{
    if (hlsim_cfg.timeout_locked != 0) {
        return hlsim_cfg.timeout_locked;
    }
    return (hlsim_cfg.dev[dev].asic == HLSIM_GAUDI1) ? 600 : 30;
}

/* A reset of either kind runs on @a dev */
int hlsim_dev_in_reset(int dev)
{
    unsigned st = hlsim_dev_status(dev);

    return (st == GAUDI_HL_DEVICE_STATUS_IN_RESET) ||
           (st == GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE);
}

typedef struct {
    int      dev;
    uint64_t kill_ns;   /* hard reset: when fd holders are killed, or 0 */
    pid_t    pid;       /* killed even if it closed the fd, or 0 */
} hlsim_reset_arg_t;

static void *hlsim_reset_timer(void *arg)
{
    hlsim_reset_arg_t ra = *(hlsim_reset_arg_t*)arg;
    int               dev = ra.dev;
    uint64_t          until;

    free(arg);
    if (ra.kill_ns != 0) {
        hlsim_reset_kill(dev, ra.kill_ns, ra.pid);
    }

    while ((until = __atomic_load_n(&hlsim_shm->dev[dev].reset_until_ns,
                                    __ATOMIC_ACQUIRE)) != 0) {
        uint64_t now = hlsim_now_ns();

        if (now < until) {
            usleep((until - now) / 1000 + 1);
        }
        (void)hlsim_dev_status(dev);   /* rewrites the status file */
    }
    return NULL;
}

/*
 * A reset: in-flight CSs abort, status back after @ms (facts 7.3). Every
 * reset of Gaudi1/2 with a context open is hard (no inference soft reset,
 * K612 common/device.c:1657-1676): status IN_RESET kills the compute fd's
 * opener after kill_delay_ms, and the reset ends @ms after that. The reset
 * upon device release (status IN_RESET_AFTER_DEVICE_RELEASE) has no user.
 */
static void hlsim_dev_reset_run(int dev, unsigned ms, unsigned status,
                                pid_t closer)
{
    hlsim_shdev_t     *sd = &hlsim_shm->dev[dev];
    uint64_t           now = hlsim_now_ns(), kill_ns = 0;
    hlsim_reset_arg_t *ra;
    pthread_attr_t     attr;
    pthread_t          th;

    /* the second of grace is given only if someone holds the device */
    if ((status == GAUDI_HL_DEVICE_STATUS_IN_RESET) &&
        ((closer > 0) || hlsim_node_compute_held(dev))) {
        kill_ns = now + hlsim_cfg.kill_delay_ms * 1000000ULL;
        now     = kill_ns;
    }
    __atomic_add_fetch(&sd->reset_gen, 1, __ATOMIC_ACQ_REL);
    /* a reset upon release counts nowhere (K612 common/device.c:1981-1994) */
    if (status == GAUDI_HL_DEVICE_STATUS_IN_RESET) {
        __atomic_add_fetch(&sd->hard_reset_cnt, 1, __ATOMIC_ACQ_REL);
    }
    hlsim_dev_set_status(dev, status, now + ms * 1000000ULL);
    hlsim_cs_abort_dev(dev);
    ra = malloc(sizeof(*ra));
    if (ra == NULL) {
        hlsim_log("no memory for the reset timer; status ends lazily");
        return;
    }
    ra->dev     = dev;
    ra->kill_ns = kill_ns;
    ra->pid     = closer;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, hlsim_reset_timer, ra)) {
        hlsim_log("no reset timer thread; status ends lazily, nobody is "
                  "killed");
        free(ra);
    }
    pthread_attr_destroy(&attr);
}

void hlsim_dev_reset(int dev, unsigned ms, unsigned status)
{
    hlsim_dev_reset_run(dev, ms, status, 0);
}

/* Hard reset that also kills @a pid, which closed the device but is still
 * on the driver's list of its users (K612 common/device.c:618-622, 1455) */
void hlsim_dev_reset_kill(int dev, unsigned ms, pid_t pid)
{
    hlsim_dev_reset_run(dev, ms, GAUDI_HL_DEVICE_STATUS_IN_RESET, pid);
}

/* The device's HBM file, mapped once per process and never unmapped */
uint8_t *hlsim_hbm(int dev)
{
    char  path[4200];
    void *p;
    int   fd;

    if ((p = __atomic_load_n(&hlsim_hbm_base[dev], __ATOMIC_ACQUIRE))) {
        return p;
    }
    snprintf(path, sizeof(path), "%s/hbm/dev%d", hlsim_cfg.root, dev);
    fd = hlsim_real.open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        hlsim_log("cannot open %s: %m", path);
        return NULL;
    }
    p = hlsim_real.mmap(NULL, hlsim_cfg.dev[dev].hbm_size,
                        PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                        fd, 0);
    hlsim_real.close(fd);
    if (p == MAP_FAILED) {
        hlsim_log("cannot map %s: %m", path);
        return NULL;
    }
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(&hlsim_hbm_base[dev], &expected, p, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        hlsim_real.munmap(p, hlsim_cfg.dev[dev].hbm_size);
        p = expected;
    }
    return p;
}

/* ---- public control API (hlsim.h) ---- */

int hlsim_set_device_status(int dev, unsigned status)
{
    int rc = hlsim_init();

    if (rc) {
        return rc;
    }
    if ((dev < 0) || (dev >= hlsim_cfg.num_dev) ||
        (status > GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE)) {
        return -EINVAL;
    }
    if ((status == GAUDI_HL_DEVICE_STATUS_IN_RESET) ||
        (status == GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE)) {
        __atomic_add_fetch(&hlsim_shm->dev[dev].reset_gen, 1,
                           __ATOMIC_ACQ_REL);
        hlsim_dev_set_status(dev, status, 0);
        hlsim_cs_abort_dev(dev);
    } else {
        hlsim_dev_set_status(dev, status, 0);
    }
    return 0;
}

int hlsim_get_device_status(int dev)
{
    int rc = hlsim_init();

    if (rc) {
        return rc;
    }
    if ((dev < 0) || (dev >= hlsim_cfg.num_dev)) {
        return -EINVAL;
    }
    return hlsim_dev_status(dev);
}

int hlsim_reset_device(int dev, unsigned ms)
{
    int rc = hlsim_init();

    if (rc) {
        return rc;
    }
    if ((dev < 0) || (dev >= hlsim_cfg.num_dev)) {
        return -EINVAL;
    }
    hlsim_dev_reset(dev, ms ? ms : hlsim_cfg.reset_ms,
                    GAUDI_HL_DEVICE_STATUS_IN_RESET);
    return 0;
}

int64_t hlsim_get_counter(hlsim_counter_t counter, int dev)
{
    int rc = hlsim_init();

    if (rc) {
        return rc;
    }
    if (counter == HLSIM_COUNTER_DRAM_USED) {
        if ((dev < 0) || (dev >= hlsim_cfg.num_dev)) {
            return -EINVAL;
        }
        return __atomic_load_n(&hlsim_shm->dev[dev].dram_used,
                               __ATOMIC_ACQUIRE);
    }
    if ((unsigned)counter >= HLSIM_COUNTER_LAST) {
        return -EINVAL;
    }
    return __atomic_load_n(&hlsim_counters[counter], __ATOMIC_ACQUIRE);
}

const char *hlsim_root(void)
{
    return hlsim_root_path();
}

/*
 * Totals of what a clean run must not do (page faults, DMAs through stale
 * USERPTR pins) and of the proof that polls met copies in flight: @a out
 * gets the sums over the node's devices (node-wide, every process)
 */
static void hlsim_node_totals(uint64_t out[3])
{
    unsigned i;

    out[0] = out[1] = out[2] = 0;
    for (i = 0; (hlsim_shm != NULL) && (i < hlsim_cfg.num_dev); i++) {
        out[0] += __atomic_load_n(&hlsim_shm->dev[i].page_faults,
                                  __ATOMIC_ACQUIRE);
        out[1] += __atomic_load_n(&hlsim_shm->dev[i].stale_pin_dmas,
                                  __ATOMIC_ACQUIRE);
        out[2] += __atomic_load_n(&hlsim_shm->dev[i].polls_in_flight,
                                  __ATOMIC_ACQUIRE);
    }
}

/*
 * At exit of a process that used the node: with HLSIM_TOTALS_FILE, append
 * the node's totals so far ("root=<dir> page_faults=N ..."; the suites
 * sum the last line of each root, test/suites/lib.sh), which outlives a
 * node its creator removes; with HLSIM_TOTALS=1, print this process's own
 * on stderr. A process killed or ending in _exit() writes nothing: the
 * node's state file keeps its counts (hlsim_totals ROOT).
 */
__attribute__((destructor)) static void hlsim_totals_at_exit(void)
{
    const char *file = getenv("HLSIM_TOTALS_FILE");
    const char *env  = getenv("HLSIM_TOTALS");
    uint64_t    t[3];
    char        line[4400];
    int         fd, n;

    if (hlsim_shm == NULL) {
        return;   /* never used the emulated driver */
    }
    if ((env != NULL) && !strcmp(env, "1")) {
        fprintf(stderr, "hlsim totals: page_faults=%lld stale_pin_dmas=%lld "
                "polls_in_flight=%lld (pid %d)\n",
                (long long)hlsim_counters[HLSIM_COUNTER_PAGE_FAULTS],
                (long long)hlsim_counters[HLSIM_COUNTER_STALE_PIN_DMAS],
                (long long)hlsim_counters[HLSIM_COUNTER_POLLS_IN_FLIGHT],
                (int)getpid());
    }
    if ((file == NULL) || (*file == '\0')) {
        return;
    }
    hlsim_node_totals(t);
    n  = snprintf(line, sizeof(line), "root=%s page_faults=%llu "
                  "stale_pin_dmas=%llu polls_in_flight=%llu\n",
                  hlsim_cfg.root, (unsigned long long)t[0],
                  (unsigned long long)t[1], (unsigned long long)t[2]);
    fd = hlsim_real.open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                         0666);
    if ((fd < 0) || (write(fd, line, n) != n)) {
        hlsim_log("cannot append the totals to %s: %m", file);
    }
    if (fd >= 0) {
        hlsim_real.close(fd);
    }
}
