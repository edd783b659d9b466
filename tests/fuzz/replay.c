/* replay.c: runs a fuzz target (LLVMFuzzerTestOneInput) over seed files,
 * for builds without libFuzzer.
 *   fuzz_X [FILE-OR-FOLDER...]
 * With no argument it runs over $srcdir/tests/fuzz/corpus/<its name>/ (or
 * $top_srcdir/..., or tests/fuzz/corpus/<name>/), the target's committed
 * seed corpus.  Prints how many inputs ran; exits 1 when there were none
 * (a make check test over a missing corpus fails rather than passes). */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int replay_file(const char *path, size_t *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return -1;
    /* an exact-size copy, so that ASan sees reads past the input */
    uint8_t *in = malloc(len ? len : 1);
    if (!in) {
        free(buf);
        return -1;
    }
    memcpy(in, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(in, len);
    free(in);
    (*count)++;
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_path(const char *path, size_t *count)
{
    struct stat st;
    if (stat(path, &st)) {
        fprintf(stderr, "replay: no %s\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path, count);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int r = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn) {
                r = -1;
                break;
            }
            names = nn;
        }
        size_t l = strlen(path) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(l))) {
            r = -1;
            break;
        }
        snprintf(names[n++], l, "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        if (!r)
            r = replay_path(names[i], count);
        free(names[i]);
    }
    free(names);
    return r;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    int r = 0;
    if (argc > 1) {
        for (int i = 1; i < argc && !r; i++)
            r = replay_path(argv[i], &count);
    } else {
        const char *base = strrchr(argv[0], '/');
        base = base ? base + 1 : argv[0];
        if (!strncmp(base, "lt-", 3))
            base += 3;
        const char *roots[] = {getenv("srcdir"), getenv("top_srcdir"), "."};
        char dir[4096];
        bool found = false;
        for (size_t i = 0; i < 3 && !found; i++) {
            struct stat st;
            if (!roots[i])
                continue;
            snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", roots[i],
                     base);
            found = stat(dir, &st) == 0;
        }
        if (!found) {
            fprintf(stderr, "replay: no seed corpus for %s\n", base);
            return 1;
        }
        r = replay_path(dir, &count);
    }
    printf("replay: %zu inputs\n", count);
    return r || count == 0 ? 1 : 0;
}
