/* readahead.c: the kernel's read-ahead of the mount, set through sysfs. */
#include "tiledbfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tdbfs_readahead_file(const char *mnt, char *out, size_t cap)
{
    char *real = realpath(mnt, NULL), line[4096], dev[64] = "";
    FILE *f = real ? fopen("/proc/self/mountinfo", "re") : NULL;

    while (f && fgets(line, sizeof line, f)) {
        char majmin[64], point[4096];
        /* ID PARENT MAJ:MIN ROOT POINT ... (POINT octal-escaped) */
        if (sscanf(line, "%*s %*s %63s %*s %4095s", majmin, point) == 2 &&
            strcmp(point, real) == 0)
            snprintf(dev, sizeof dev, "%s", majmin); /* the last one wins */
    }
    if (f)
        fclose(f);
    free(real);
    out[0] = '\0';
    if (dev[0])
        snprintf(out, cap, "/sys/class/bdi/%s/read_ahead_kb", dev);
}

/* Writes `kib` to sysfs file `file`, best effort. */
static void tdbfs_set_readahead(const char *file, unsigned long kib)
{
    FILE *ra = file[0] ? fopen(file, "we") : NULL;

    if (ra) {
        fprintf(ra, "%lu\n", kib);
        fclose(ra);
    }
}

void tdbfs_readahead_once(struct tdbfs_daemon *d)
{
    if (d->bdi_ra[0] && !atomic_exchange(&d->ra_done, true))
        tdbfs_set_readahead(d->bdi_ra, d->readahead_kib);
}
