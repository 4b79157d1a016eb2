/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * ucx-gaudi-check: what this node gives a job, per Gaudi device, and why
 * not when something is missing. Every answer comes from the module's own
 * detection (discovery, driver identity, the flavour expectations and
 * probes, the copy backend choice, SynapseAI loading), linked from its
 * internal library. No root needed. A compute node is opened only with
 * --probe, and only when no process holds it (docs/base.md, "Selection").
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_dev.h>
#include <uct/gaudi/dma/gaudi_dma.h>
#include <uct/gaudi/syn/gaudi_syn.h>

#include <ucp/api/ucp.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_MAX_HOLDERS 8
#define CHECK_FIX_HABANA  "install Habana's driver (habanalabs-dkms, " \
                          "Intel Gaudi software)"

/* Exit status: the node can run a job now, cannot, or has no Gaudi */
enum {
    CHECK_EXIT_USABLE   = 0,
    CHECK_EXIT_UNUSABLE = 1,
    CHECK_EXIT_NO_GAUDI = 2,
    CHECK_EXIT_USAGE    = 3
};


/* Who holds a compute node open */
typedef struct {
    int   active;                     /* OPEN_STATS: a compute context */
    int   num_pids;
    pid_t pids[CHECK_MAX_HOLDERS];
} check_holders_t;


/* What one device gives a job */
typedef struct {
    const uct_gaudi_dev_info_t *info;
    check_holders_t             holders;
    const char                  *flavour;
    char                        identity[UCT_GAUDI_DRIVER_STR_MAX];
    int                         probed;     /* compute node was opened */
    int                         export_ok;
    int                         import_ok;
    int                         bar_ok;     /* BAR covers the DRAM */
    int                         copy_ok;
    const char                  *copy_why;
    int                         usable;     /* a job gets it now */
} check_dev_t;


/* Process-wide answers */
typedef struct {
    int                 probe;
    uct_gaudi_backend_t backend;          /* a plain (MPI) process's */
    int                 syn_found;
    char                syn_where[300];
    int                 rdma_nics;
    int                 ucx_dmabuf;       /* UCX registers dma-bufs */
} check_node_t;


static const char *check_yes(int v)
{
    return v ? "yes" : "no";
}

/* The driver flavour from what is known before a compute node is open:
 * node names (misc-era codes: Linux 6.1/6.2) and sysfs (out-of-tree) */
static const char *check_flavour(const uct_gaudi_dev_info_t *info)
{
    if ((info->abi == GAUDI_HL_ABI_LEGACY) && (info->out_of_tree > 0)) {
        return "Habana's out-of-tree driver, an old release (/dev/hlN)";
    } else if (info->abi == GAUDI_HL_ABI_LEGACY) {
        return "upstream Linux 6.1/6.2 misc driver (/dev/hlN)";
    } else if (info->out_of_tree > 0) {
        return "Habana's out-of-tree driver (accel nodes)";
    } else if (info->out_of_tree == 0) {
        return "upstream in-kernel accel driver (Linux >= 6.3)";
    }
    return "accel driver, build unknown (no /sys/module/habanalabs/taint)";
}

/* The path a holder's /proc/PID/fd link shows for the compute node of
 * @a info: the node's real path (an emulated node's is under its root) */
static void check_node_path(const uct_gaudi_dev_info_t *info, char *buf,
                            size_t max)
{
    char node[64];
    char *real;

    snprintf(node, sizeof(node), "/dev/%s%s",
             (info->abi == GAUDI_HL_ABI_LEGACY) ? "" : "accel/",
             info->node_name);
    real = realpath(node, NULL);
    snprintf(buf, max, "%s", (real != NULL) ? real : node);
    free(real);
}

/* Processes holding the compute node open, from the /proc/PID/fd this user
 * may read (every process for root, its own otherwise) */
static void check_scan_fds(const uct_gaudi_dev_info_t *info,
                           check_holders_t *holders)
{
    char path[PATH_MAX], target[PATH_MAX], want[PATH_MAX];
    struct dirent *p, *f;
    DIR *proc, *fds;
    ssize_t n;
    pid_t pid;

    check_node_path(info, want, sizeof(want));
    proc = opendir("/proc");
    if (proc == NULL) {
        return;
    }

    while ((p = readdir(proc)) != NULL) {
        pid = (pid_t)strtol(p->d_name, NULL, 10);
        if ((pid <= 0) || (pid == getpid())) {   /* an inherited fd */
            continue;
        }
        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        fds = opendir(path);
        if (fds == NULL) {
            continue;   /* another user's, or gone */
        }
        while ((f = readdir(fds)) != NULL) {
            if (f->d_name[0] == '.') {
                continue;
            }
            snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)pid,
                     f->d_name);
            n = readlink(path, target, sizeof(target) - 1);
            if (n <= 0) {
                continue;
            }
            target[n] = '\0';
            if (!strcmp(target, want)) {
                if (holders->num_pids < CHECK_MAX_HOLDERS) {
                    holders->pids[holders->num_pids++] = pid;
                }
                break;
            }
        }
        closedir(fds);
    }
    closedir(proc);
}

/* OPEN_STATS of the control node (never the compute node), then the fds */
static void check_holders(const uct_gaudi_dev_info_t *info,
                          check_holders_t *holders)
{
    struct hl_open_stats_info stats;
    uct_gaudi_hl_t hl;

    memset(holders, 0, sizeof(*holders));
    if (uct_gaudi_hl_open(info->minor, 1, UCT_GAUDI_HL_OPEN_QUIET, &hl) ==
        UCS_OK) {
        if (uct_gaudi_hl_open_stats(&hl, &stats) == UCS_OK) {
            holders->active = stats.is_compute_ctx_active ||
                              stats.compute_ctx_in_release;
        }
        uct_gaudi_hl_close(&hl);
    }
    check_scan_fds(info, holders);
}

static int check_held(const check_holders_t *holders)
{
    return holders->active || (holders->num_pids > 0);
}

static void check_comm(pid_t pid, char *buf, size_t max)
{
    char path[64];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    buf[0] = '\0';
    f = fopen(path, "r");
    if (f != NULL) {
        if (fgets(buf, (int)max, f) != NULL) {
            buf[strcspn(buf, "\n")] = '\0';
        }
        fclose(f);
    }
}

/* Open a free compute node to ask the driver itself (identity, export and
 * op 99 probes); an open refused with EBUSY means someone holds it */
static void check_probe(check_dev_t *d)
{
    uct_gaudi_driver_t driver;
    ucs_status_t status;
    uct_gaudi_hl_t hl;
    int supported;

    status = uct_gaudi_hl_open(d->info->minor, 0, UCT_GAUDI_HL_OPEN_QUIET,
                               &hl);
    if (status != UCS_OK) {
        if (errno == EBUSY) {
            d->holders.active = 1;
        }
        return;
    }

    d->probed = 1;
    uct_gaudi_driver_identify(&hl, &driver);
    uct_gaudi_driver_str(&driver, d->identity, sizeof(d->identity));
    if (uct_gaudi_hl_probe_export(&hl, &supported) == UCS_OK) {
        d->export_ok = supported;
    }
    if (uct_gaudi_hl_probe_reg_dmabuf(&hl, &supported) == UCS_OK) {
        d->import_ok = supported;
    }
    uct_gaudi_hl_close(&hl);
}

/* What the module expects of the device before it is taken (the same
 * rules as gaudi_ipc's: export missing only on the 6.1/6.2 driver with
 * DRAM virtual memory, facts 4.1; op 99 only in Habana's driver, 4.3) */
static void check_expect(check_dev_t *d, const check_node_t *node)
{
    const uct_gaudi_dev_info_t *info = d->info;

    d->flavour   = check_flavour(info);
    d->export_ok = (info->abi != GAUDI_HL_ABI_LEGACY) ||
                   (info->asic == UCT_GAUDI_ASIC_GAUDI1);
    d->import_ok = (info->out_of_tree >= 0) ? info->out_of_tree :
                   (info->abi != GAUDI_HL_ABI_LEGACY);
    d->bar_ok    = (info->dram_bar_size == 0) ||
                   (info->dram_bar_size >= info->hw_ip.u61.dram_size);
    d->copy_ok   = uct_gaudi_dma_check_expected(info->asic, node->backend,
                                                &d->copy_why) == UCS_OK;
}

static void check_device(check_dev_t *d, const check_node_t *node)
{
    check_expect(d, node);
    check_holders(d->info, &d->holders);
    if (node->probe && !check_held(&d->holders)) {
        check_probe(d);
    }
    d->usable = d->copy_ok && !check_held(&d->holders) &&
                (d->info->status == GAUDI_HL_DEVICE_STATUS_OPERATIONAL);
}

static void check_print_holders(const check_dev_t *d)
{
    char comm[32];
    int i;

    if (!check_held(&d->holders)) {
        printf("  compute node  free (%s)\n", d->info->node_name);
        return;
    }

    printf("  compute node  held");
    for (i = 0; i < d->holders.num_pids; ++i) {
        check_comm(d->holders.pids[i], comm, sizeof(comm));
        printf("%s pid %d (%s)", i ? "," : " by", (int)d->holders.pids[i],
               comm);
    }
    if (d->holders.num_pids == 0) {
        printf(" by a process of another user (root sees which)");
    }
    printf(": a job gets another device\n");
}

static void check_print_dram(const uct_gaudi_dev_info_t *info)
{
    uint64_t dram = info->hw_ip.u61.dram_size;

    printf("  DRAM          %" PRIu64 " MiB, page %" PRIu64 " MiB",
           dram >> 20, (uint64_t)info->hw_ip.u61.dram_page_size >> 20);
    if (info->dram_bar_size == 0) {
        printf(", PCI BAR size unknown\n");
    } else {
        printf(", PCI BAR %" PRIu64 " MiB: %s\n", info->dram_bar_size >> 20,
               (info->dram_bar_size >= dram) ? "covers all of it" :
               "covers part of it");
    }
}

/* Print @a text after @a head, wrapped at 79 columns under column 16 */
static void check_wrap(const char *head, const char *text)
{
    const int indent = 16, width = 79;
    int col = printf("%-*s", indent, head);
    const char *p = text;
    int len;

    while (*p != '\0') {
        len = (int)strcspn(p, " ");
        if ((col > indent) && (col + 1 + len > width)) {
            col = printf("\n%*s", indent, "") - 1;
        } else if (col > indent) {
            col += printf(" ");
        }
        col += printf("%.*s", len, p);
        p   += len;
        p   += strspn(p, " ");
    }
    printf("\n");
}

/* A missing piece: what, why, and the fix */
static void check_missing(const char *what, const char *why, const char *fix)
{
    char buf[512];

    snprintf(buf, sizeof(buf), "%s: %s", what, why);
    check_wrap("  missing", buf);
    check_wrap("    fix", fix);
}

/* The driver's device status (facts 2.2) and what to do about it */
static const char *check_status(uint32_t status, const char **fix_p)
{
    switch (status) {
    case GAUDI_HL_DEVICE_STATUS_OPERATIONAL:
        *fix_p = NULL;
        return "operational";
    case GAUDI_HL_DEVICE_STATUS_IN_RESET:
    case GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE:
        *fix_p = "wait: the reset ends by itself (seconds)";
        return "in reset";
    case GAUDI_HL_DEVICE_STATUS_IN_DEVICE_CREATION:
        *fix_p = "wait: the driver is still initialising it";
        return "being created";
    case GAUDI_HL_DEVICE_STATUS_NEEDS_RESET:
        *fix_p = "reset the device: reload the habanalabs driver";
        return "needs a reset";
    default:
        *fix_p = "see dmesg; reset the device or reload the driver";
        return "malfunction";
    }
}

static void check_print_device(const check_dev_t *d, const check_node_t *node)
{
    const uct_gaudi_dev_info_t *info = d->info;
    const char *how = d->probed ? "probed" : "expected, --probe asks";
    const char *fix, *status = check_status(info->status, &fix);

    printf("\n%s  %s  %s  pci %s  module %u  %s\n", info->name,
           info->node_name, uct_gaudi_asic_name(info->asic),
           info->pci_addr[0] ? info->pci_addr : "unknown", info->module_id,
           status);
    if (fix != NULL) {
        check_missing("an operational device", status, fix);
    }
    printf("  driver        %s\n", d->flavour);
    if (d->probed) {
        printf("  identity      %s\n", d->identity);
    }
    check_print_holders(d);
    check_print_dram(info);
    printf("  dma-buf       export %s, import (op 99) %s (%s)\n",
           check_yes(d->export_ok), check_yes(d->import_ok), how);
    printf("  copy backend  %s in an MPI process%s\n",
           uct_gaudi_backend_names[node->backend],
           d->copy_ok ? "" : ": no copy transport");
}

/* What MPI (plain process) and NIXL (SynapseAI loaded) get on the device */
static void check_print_paths(const check_dev_t *d, const check_node_t *node)
{
    int ipc = d->copy_ok && d->export_ok && d->import_ok;
    int gdr = d->copy_ok && d->export_ok && node->ucx_dmabuf &&
              (node->rdma_nics > 0);

    printf("  Gaudi memory  %s\n", d->copy_ok ?
           "gaudi_cpy (DMA engine copies)" : "NOT copyable (no gaudi_cpy)");
    printf("  MPI, 1 node   %s\n", !d->copy_ok ? "nothing" : ipc ?
           "gaudi_ipc, device to device" : "staged through host memory");
    printf("  MPI, 2 nodes  %s\n", !d->copy_ok ? "nothing" : gdr ?
           "GPUDirect RDMA, NIC to HBM" :
           "staged through host over the network");
    printf("  NIXL          %s\n", !node->syn_found ?
           "no: SynapseAI not found (frameworks need it)" :
           !d->copy_ok ? "nothing" : ipc ?
           "as MPI; puts/gets on gaudi_ipc on this node" :
           "as MPI; puts/gets staged through host on this node");

    if (!d->copy_ok) {
        check_missing("gaudi_cpy", d->copy_why,
                      "install SynapseAI (libSynapse.so: habanalabs-graph, "
                      "Intel Gaudi software) or name it in "
                      "UCX_GAUDI_SYNAPSE_LIB");
    }
    if (!d->export_ok) {
        check_missing("dma-buf export", "the Linux 6.1/6.2 driver exports "
                      "no memory of an ASIC with DRAM virtual memory",
                      "kernel >= 6.3 (accel driver: export, for GPUDirect "
                      "RDMA), or for export and import too, "
                      CHECK_FIX_HABANA);
    }
    if (!d->import_ok) {
        check_missing("gaudi_ipc (dma-buf import, op 99)",
                      "only Habana's out-of-tree driver has op 99; "
                      "processes on this node stage through host",
                      CHECK_FIX_HABANA);
    }
    if (!d->bar_ok) {
        check_missing("whole-DRAM export", "the DRAM PCI BAR is smaller "
                      "than the DRAM: buffers beyond it cannot be exported",
                      "BIOS: enable Above 4G decoding and Resizable BAR "
                      "(large MMIO) so that BAR 4 covers the HBM");
    }
    if (d->copy_ok && d->export_ok && !node->ucx_dmabuf) {
        check_missing("GPUDirect RDMA", "this UCX cannot register dma-bufs",
                      "UCX >= 1.14 (with the module rebuilt against it)");
    } else if (d->copy_ok && d->export_ok && (node->rdma_nics == 0)) {
        check_missing("GPUDirect RDMA", "no RDMA NIC "
                      "(/sys/class/infiniband is empty)",
                      "an RDMA NIC whose driver registers dma-bufs "
                      "(e.g. mlx5, rdma-core)");
    }
}

static int check_count_rdma_nics(void)
{
    struct dirent *e;
    int count = 0;
    DIR *dir;

    dir = opendir("/sys/class/infiniband");
    if (dir == NULL) {
        return 0;
    }
    while ((e = readdir(dir)) != NULL) {
        count += (e->d_name[0] != '.');
    }
    closedir(dir);
    return count;
}

/* Before SynapseAI is loaded: a plain process's backend; then whether
 * SynapseAI loads (what a framework process has) */
static void check_node(check_node_t *node, uct_gaudi_asic_t asic)
{
    const char *libname = uct_gaudi_global_config()->synapse_lib;
    uct_gaudi_syn_t syn;

    node->backend = uct_gaudi_ctx_expected_backend(asic);
    memset(&syn, 0, sizeof(syn));
    node->syn_found = uct_gaudi_syn_load(libname, uct_gaudi_device_minor_known,
                                         &syn) == UCS_OK;
    if (node->syn_found) {
        snprintf(node->syn_where, sizeof(node->syn_where), "%s", syn.path);
        uct_gaudi_syn_unload(&syn);
    } else {
        snprintf(node->syn_where, sizeof(node->syn_where), "%s", libname);
    }
    node->rdma_nics  = check_count_rdma_nics();
#if UCT_GAUDI_HAVE_MD_FLAG_REG_DMABUF
    node->ucx_dmabuf = 1;
#endif
}

/* Where the module is: the directory the wrapper preloads from (and UCX
 * >= 1.22 loads from when it is UCX's module directory) */
static int check_module(void)
{
    const char *dir = getenv("GAUDI_UCX_LIBDIR");
    unsigned major, minor, release;
    char path[PATH_MAX];
    int found;

    if ((dir == NULL) || (*dir == '\0')) {
        dir = UCX_GAUDI_CHECK_MODULEDIR;
    }
    snprintf(path, sizeof(path), "%s/libuct_gaudi.so", dir);
    found = access(path, R_OK) == 0;
    ucp_get_version(&major, &minor, &release);
    printf("module          %s%s\n", path, found ? "" : " NOT FOUND");
    check_wrap("", ((major > 1) || (minor >= 22)) ?
               "UCX loads it itself from its module directory, or from "
               "UCX_PLUGIN_PATH" :
               "this UCX loads only its own modules: run jobs under "
               "ucx-gaudi-run, which preloads it");
    if (!found) {
        check_missing("module", "libuct_gaudi.so is not where the wrapper "
                      "looks", "install the ucx-gaudi package (or make "
                      "install), or set GAUDI_UCX_LIBDIR to its directory");
    }
    return found;
}

static int check_no_gaudi(void)
{
    check_wrap("Gaudi", "none on this node: no habanalabs device node "
               "(/dev/accel/accel*, /dev/hl*) answers");
    if (access("/sys/module/habanalabs", F_OK) != 0) {
        check_missing("driver", "the habanalabs driver is not loaded",
                      "modprobe habanalabs (Linux >= 6.1), or install "
                      "Habana's driver (habanalabs-dkms)");
    } else {
        check_missing("device", "the habanalabs driver is loaded but has "
                      "no device", "see dmesg (firmware, PCI)");
    }
    printf("\nusable: no (no Gaudi)\n");
    return CHECK_EXIT_NO_GAUDI;
}

static void check_usage(FILE *stream)
{
    fprintf(stream,
            "usage: ucx-gaudi-check [--probe] [--help]\n"
            "  What this node gives a job on each Gaudi device, and what\n"
            "  is missing, why and the fix. Exit 0: a job started now gets\n"
            "  a usable device; 1: no usable free device; 2: no Gaudi.\n"
            "  --probe  open each free compute node to ask the driver\n"
            "           (identity, dma-buf export and op 99 probes); the\n"
            "           close resets a Gaudi2/Gaudi3 device (seconds)\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"probe", no_argument, NULL, 'p'},
        {"help",  no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    const uct_gaudi_devices_t *devs;
    check_dev_t dev[GAUDI_HL_MAX_MINOR];
    check_node_t node;
    unsigned i, num_usable = 0, num_free = 0;
    int c, module_ok;

    memset(&node, 0, sizeof(node));
    while ((c = getopt_long(argc, argv, "ph", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            node.probe = 1;
            break;
        case 'h':
            check_usage(stdout);
            return CHECK_EXIT_USABLE;
        default:
            check_usage(stderr);
            return CHECK_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        check_usage(stderr);
        return CHECK_EXIT_USAGE;
    }

    printf("ucx-gaudi-check %s, UCX %s\n", UCX_GAUDI_CHECK_VERSION,
           ucp_get_version_string());
    devs = uct_gaudi_devices();
    if (devs->count == 0) {
        return check_no_gaudi();
    }

    module_ok = check_module();
    check_node(&node, devs->dev[0].asic);
    printf("SynapseAI       %s %s\n", node.syn_found ? "found:" :
           "not found:", node.syn_where);
    printf("RDMA NICs       %d; UCX dma-buf registration %s\n",
           node.rdma_nics, check_yes(node.ucx_dmabuf));

    memset(dev, 0, sizeof(dev));
    for (i = 0; i < devs->count; ++i) {
        dev[i].info = &devs->dev[i];
        check_device(&dev[i], &node);
        check_print_device(&dev[i], &node);
        check_print_paths(&dev[i], &node);
        num_usable += dev[i].usable;
        num_free   += !check_held(&dev[i].holders);
    }

    printf("\nusable: %s (%u of %u devices free, %u usable now%s)\n",
           (num_usable && module_ok) ? "yes" : "no", num_free, devs->count,
           num_usable, module_ok ? "" : "; the module is not installed");
    return (num_usable && module_ok) ? CHECK_EXIT_USABLE :
           CHECK_EXIT_UNUSABLE;
}
