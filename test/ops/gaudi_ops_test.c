/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The op tables of the Gaudi components, as UCX sees them after loading the
 * module: no op that UCX calls unconditionally may be NULL (UCX calls them
 * without checking; a NULL one crashes the process). Checked for the UCX
 * this test is built against:
 * - every component op;
 * - every MD op and every internal iface op (UCX calls each of them
 *   unconditionally where its release has it: the structs hold nothing
 *   else);
 * - the iface ops UCX calls on every transport, and the ops of each
 *   capability the transport reports.
 * Prints one PASS/FAIL line per check and "N passed, N failed".
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct_gaudi_ucx_features.h>
#include <uct/api/uct.h>
#include <uct/base/uct_component.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/async/async.h>
#include <stdio.h>
#include <string.h>


static unsigned npass, nfail;

static void check(int ok, const char *what, const char *name)
{
    printf("%s %s: %s\n", ok ? "PASS" : "FAIL", what, name);
    if (ok) {
        ++npass;
    } else {
        ++nfail;
    }
}

typedef void (*op_t)(void);

/* NULL entries of a struct made of function pointers only; names them */
static unsigned null_ops(const void *table, size_t size, const char *what,
                         int verbose)
{
    op_t ops[size / sizeof(op_t)];
    unsigned i, count = 0;

    memcpy(ops, table, sizeof(ops));
    for (i = 0; i < size / sizeof(op_t); ++i) {
        if (ops[i] == NULL) {
            if (verbose) {
                printf("      %s: entry %u (of %zu) is NULL\n", what, i,
                       size / sizeof(op_t));
            }
            ++count;
        }
    }
    return count;
}

/* The scan itself finds NULLs: a table with two holes reports two */
static void check_scan(void)
{
    uct_md_ops_t ops;

    memset(&ops, 0xff, sizeof(ops));
    ops.close     = NULL;
    ops.mem_query = NULL;
    check(null_ops(&ops, sizeof(ops), "scan", 0) == 2,
          "scan finds NULL ops", "uct_md_ops_t with 2 holes");
}

static void check_component(uct_component_h component)
{
    const char *name = component->name;

    check(component->query_md_resources != NULL, "query_md_resources", name);
    check(component->md_open != NULL, "md_open", name);
    check(component->cm_open != NULL, "cm_open", name);
    check(component->rkey_unpack != NULL, "rkey_unpack", name);
    check(component->rkey_ptr != NULL, "rkey_ptr", name);
    check(component->rkey_release != NULL, "rkey_release", name);
    check(component->md_vfs_init != NULL, "md_vfs_init", name);
#if UCT_GAUDI_HAVE_COMPONENT_RKEY_COMPARE
    check(component->rkey_compare != NULL, "rkey_compare", name);
#endif
}

#define CHECK_OP(_ops, _op, _name) check((_ops)->_op != NULL, #_op, _name)

#define CHECK_CAP_OP(_attr, _flag, _ops, _op, _name) \
    do { \
        if ((_attr)->cap.flags & (_flag)) { \
            CHECK_OP(_ops, _op, _name); \
        } \
    } while (0)

static void check_iface(uct_iface_h iface, const char *name)
{
    const uct_iface_ops_t *ops = &iface->ops;
    const uct_base_iface_t *base = ucs_derived_of(iface, uct_base_iface_t);
    uct_iface_attr_t attr;

    /* called on every transport */
    CHECK_OP(ops, ep_create, name);
    CHECK_OP(ops, ep_destroy, name);
    CHECK_OP(ops, ep_flush, name);
    CHECK_OP(ops, ep_fence, name);
    CHECK_OP(ops, iface_flush, name);
    CHECK_OP(ops, iface_fence, name);
    CHECK_OP(ops, iface_progress_enable, name);
    CHECK_OP(ops, iface_progress_disable, name);
    CHECK_OP(ops, iface_progress, name);
    CHECK_OP(ops, iface_close, name);
    CHECK_OP(ops, iface_query, name);
    CHECK_OP(ops, iface_get_device_address, name);
    CHECK_OP(ops, iface_get_address, name);
    CHECK_OP(ops, iface_is_reachable, name);
    /* UCX 1.12's adaptive progress arms every iface it deactivates */
    CHECK_OP(ops, iface_event_arm, name);

    check(uct_iface_query(iface, &attr) == UCS_OK, "iface_query works",
          name);

    /* called for what the transport reports */
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_PUT_SHORT, ops, ep_put_short, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_PUT_BCOPY, ops, ep_put_bcopy, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_PUT_ZCOPY, ops, ep_put_zcopy, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_GET_SHORT, ops, ep_get_short, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_GET_BCOPY, ops, ep_get_bcopy, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_GET_ZCOPY, ops, ep_get_zcopy, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_AM_SHORT, ops, ep_am_short, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_AM_BCOPY, ops, ep_am_bcopy, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_AM_ZCOPY, ops, ep_am_zcopy, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_PENDING, ops, ep_pending_add, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_PENDING, ops, ep_pending_purge, name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_CONNECT_TO_EP, ops, ep_get_address,
                 name);
    CHECK_CAP_OP(&attr, UCT_IFACE_FLAG_CONNECT_TO_EP, ops, ep_connect_to_ep,
                 name);

    /* every internal op of this UCX */
    check(base->internal_ops != NULL, "internal ops", name);
    if (base->internal_ops != NULL) {
        check(null_ops(base->internal_ops, sizeof(*base->internal_ops),
                       "internal ops", 1) == 0,
              "no NULL internal op", name);
    }
}

static void check_tl(uct_md_h md, uct_worker_h worker,
                     const uct_tl_resource_desc_t *rsc)
{
    uct_iface_config_t *config;
    uct_iface_params_t params;
    uct_iface_h iface;
    ucs_status_t status;

    status = uct_md_iface_config_read(md, rsc->tl_name, NULL, NULL, &config);
    check(status == UCS_OK, "iface config", rsc->tl_name);
    if (status != UCS_OK) {
        return;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = rsc->tl_name;
    params.mode.device.dev_name = rsc->dev_name;

    status = uct_iface_open(md, worker, &params, config, &iface);
    uct_config_release(config);
    check(status == UCS_OK, "iface open", rsc->tl_name);
    if (status == UCS_OK) {
        check_iface(iface, rsc->tl_name);
        uct_iface_close(iface);
    }
}

static void check_md(uct_component_h component, const char *md_name,
                     uct_worker_h worker)
{
    uct_tl_resource_desc_t *resources;
    uct_md_config_t *config;
    unsigned i, num_resources;
    ucs_status_t status;
    uct_md_h md;

    status = uct_md_config_read(component, NULL, NULL, &config);
    check(status == UCS_OK, "md config", md_name);
    if (status != UCS_OK) {
        return;
    }
    status = uct_md_open(component, md_name, config, &md);
    uct_config_release(config);
    check(status == UCS_OK, "md open", md_name);
    if (status != UCS_OK) {
        return;
    }

    check(null_ops(md->ops, sizeof(*md->ops), "md ops", 1) == 0,
          "no NULL md op", md_name);

    status = uct_md_query_tl_resources(md, &resources, &num_resources);
    check((status == UCS_OK) && (num_resources > 0), "tl resources",
          md_name);
    if (status == UCS_OK) {
        for (i = 0; i < num_resources; ++i) {
            check_tl(md, worker, &resources[i]);
        }
        uct_release_tl_resource_list(resources);
    }
    uct_md_close(md);
}

int main(int argc, char **argv)
{
    uct_md_resource_desc_t *md_resources;
    uct_component_h *components;
    uct_component_attr_t attr;
    unsigned i, j, num_components, found = 0;
    ucs_async_context_t *async;
    uct_worker_h worker;

    check_scan();

    if ((ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) !=
         UCS_OK) ||
        (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) !=
         UCS_OK) ||
        (uct_query_components(&components, &num_components) != UCS_OK)) {
        check(0, "UCT init", "worker and components");
        goto out;
    }

    for (i = 0; i < num_components; ++i) {
        if (strncmp(components[i]->name, "gaudi_", 6) != 0) {
            continue;
        }

        ++found;
        check_component(components[i]);

        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(components[i], &attr) != UCS_OK) {
            check(0, "component query", components[i]->name);
            continue;
        }
        md_resources              = alloca(sizeof(*md_resources) *
                                           attr.md_resource_count);
        attr.field_mask           = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources         = md_resources;
        if (uct_component_query(components[i], &attr) != UCS_OK) {
            check(0, "component query", components[i]->name);
            continue;
        }
        for (j = 0; j < attr.md_resource_count; ++j) {
            check_md(components[i], md_resources[j].md_name, worker);
        }
    }

    check(found == 2, "both Gaudi components loaded", "gaudi_copy, gaudi_ipc");
    uct_release_component_list(components);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
out:
    printf("%u passed, %u failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
