/* fuzz.h: what the fuzz targets share.  Each target defines
 * LLVMFuzzerTestOneInput; built with --enable-fuzz it links with libFuzzer,
 * otherwise with replay.c, which runs it over the seed corpus in make check.
 * The targets check nothing themselves: the sanitizers and the allocation
 * limits of the fuzzer do. */
#ifndef TDB_FUZZ_H
#define TDB_FUZZ_H

#include "core/core.h"
#include "core/store.h"

#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The AES-256-GCM key of the encrypted corpus array ("0123456789abcdeF"
 * twice, the key_hex
 * of the corpus case encrypted_aes256gcm) so that its seeds decode. */
static const uint8_t fuzz_key[32] = {
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd',
    'e', 'F', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b',
    'c', 'd', 'e', 'F'};

/* An in-memory backend holding one file `path` with the given bytes. */
static inline int fuzz_mem_file(struct tdb_io *io, const char *path,
                                const uint8_t *data, size_t size)
{
    if (!io->ops && tdb_io_mem(io))
        return -1;
    return io->ops->write_at(io->ctx, path, 0, size ? (const void *)data : "",
                             size);
}

/* Aborts unless the entries of a parsed listing keep tdb_store_answer_add's
 * contract: a name, not empty, with no empty, "." or ".." part and no
 * trailing '/'; a folder has no size. */
static inline void fuzz_check_dents(const struct tdb_store_answer *a)
{
    for (size_t i = 0; i < a->n; i++) {
        const struct tdb_store_dent *e = &a->e[i];
        if (!e->name || !e->name[0])
            abort();
        for (const char *p = e->name; *p;) {
            size_t n = strcspn(p, "/");
            if (n == 0 || (n == 1 && p[0] == '.') ||
                (n == 2 && p[0] == '.' && p[1] == '.'))
                abort();
            p += n + (p[n] == '/');
            if (p[-1] == '/' && !*p)
                abort();
        }
        if (e->is_dir && e->size)
            abort();
    }
}

#endif
