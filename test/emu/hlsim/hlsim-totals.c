/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * hlsim_totals ROOT... (hlsim-totals.c, not hlsim_*.c: not part of the
 * library): print the node-wide totals of the emulated nodes
 * under the given HLSIM_ROOT directories, summed, as one line
 * "hlsim totals: page_faults=N stale_pin_dmas=N polls_in_flight=N"
 * (docs/hlsim.md, "Totals"). Reads each node's state file; not an
 * emulated process itself (run it without LD_PRELOAD). Exit status 1 if a
 * root has no readable state of this emulator's version.
 */

#include "hlsim_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Add the totals of the node in @a root to @a sum; 0 or -1 */
static int hlsim_totals_add(const char *root, unsigned long long sum[3])
{
    const hlsim_shm_t *shm;
    char               path[4200];
    unsigned           i;
    int                fd;

    snprintf(path, sizeof(path), "%s/state", root);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "hlsim_totals: %s: %m\n", path);
        return -1;
    }
    shm = mmap(NULL, sizeof(*shm), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (shm == MAP_FAILED) {
        fprintf(stderr, "hlsim_totals: cannot map %s: %m\n", path);
        return -1;
    }
    if ((shm->magic != HLSIM_SHM_MAGIC) || (shm->num_dev > HLSIM_MAX_DEV)) {
        fprintf(stderr, "hlsim_totals: %s: not a node of this emulator "
                "version\n", path);
        munmap((void*)shm, sizeof(*shm));
        return -1;
    }
    for (i = 0; i < shm->num_dev; i++) {
        sum[0] += __atomic_load_n(&shm->dev[i].page_faults, __ATOMIC_ACQUIRE);
        sum[1] += __atomic_load_n(&shm->dev[i].stale_pin_dmas,
                                  __ATOMIC_ACQUIRE);
        sum[2] += __atomic_load_n(&shm->dev[i].polls_in_flight,
                                  __ATOMIC_ACQUIRE);
    }
    munmap((void*)shm, sizeof(*shm));
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long long sum[3] = {0, 0, 0};
    int                i, rc = 0;

    for (i = 1; i < argc; i++) {
        if (hlsim_totals_add(argv[i], sum)) {
            rc = 1;
        }
    }
    printf("hlsim totals: page_faults=%llu stale_pin_dmas=%llu "
           "polls_in_flight=%llu\n", sum[0], sum[1], sum[2]);
    return rc;
}
