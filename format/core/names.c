/* names.c: timestamped names (format_spec/timestamped_name.md): parsing
 * (every era, for reading) and making (for writing); and what new names
 * are made of: the engine's one clock (tdb_now_ms) and its one random
 * source (tdb_random), which every writer, filter and backend uses. */
#include "core/names.h"

#include <openssl/evp.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Parses a whole field of decimal digits into *v (no sign, no overflow). */
static bool names_parse_u64(const char *s, size_t n, uint64_t *v)
{
    if (!n)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        if (!tdb_mul_ok(x, 10, &x) ||
            !tdb_add_ok(x, (uint64_t)(s[i] - '0'), &x))
            return false;
    }
    *v = x;
    return true;
}

static bool names_set_uuid(struct tdb_tsname *out, const char *s, size_t n)
{
    if (!n || n >= sizeof out->uuid)
        return false;
    memcpy(out->uuid, s, n);
    out->uuid[n] = 0;
    return true;
}

const char *tdb_last_component(const char *path, size_t *len)
{
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/')
        n--;
    size_t s = n;
    while (s > 0 && path[s - 1] != '/')
        s--;
    *len = n - s;
    return path + s;
}

/* The '_'-separated fields of a name after its "__" (at most 4). */
struct names_fields {
    const char *f[4];
    size_t fl[4], n;
    size_t under;       /* the underscores, the leading two included */
};

/* Splits s[2..len) into x.  @return false when there are more than 4
 * fields or one is empty. */
static bool names_split(const char *s, size_t len, struct names_fields *x)
{
    x->n = 0;
    x->under = 2;
    for (size_t i = 2, b = 2; i <= len; i++) {
        if (i == len || s[i] == '_') {
            if (i < len)
                x->under++;
            if (x->n == 4)
                return false;
            x->f[x->n] = s + b;
            x->fl[x->n] = i - b;
            x->n++;
            b = i + 1;
        }
    }
    for (size_t k = 0; k < x->n; k++)
        if (!x->fl[k])
            return false;
    return true;
}

/* The era, times, uuid and version the fields x say, into out.
 * @return whether they are well-formed. */
static bool names_read_fields(const struct names_fields *x,
                              struct tdb_tsname *out)
{
    const char *const *f = x->f;
    const size_t *fl = x->fl, nf = x->n;
    bool ok;
    if (x->under == 5) {
        /* __t1_t2_uuid_v (format 5 and later) */
        uint64_t v = 0;
        out->era = 3;
        ok = nf == 4 && names_parse_u64(f[0], fl[0], &out->t1) &&
             names_parse_u64(f[1], fl[1], &out->t2) &&
             names_set_uuid(out, f[2], fl[2]) &&
             names_parse_u64(f[3], fl[3], &v) && v <= UINT32_MAX;
        out->version = (uint32_t)v;
    } else if (fl[nf - 1] == 32) {
        /* __t1_t2_uuid (formats 3 and 4; also schema and metadata names) */
        out->era = 2;
        ok = nf == 3 && names_parse_u64(f[0], fl[0], &out->t1) &&
             names_parse_u64(f[1], fl[1], &out->t2) &&
             names_set_uuid(out, f[2], fl[2]);
    } else {
        /* __uuid_t1[_t2] (formats 1 and 2): TileDB reads the last field as
         * the timestamp, start and end alike. */
        out->era = 1;
        ok = (nf == 2 || nf == 3) && names_set_uuid(out, f[0], fl[0]) &&
             names_parse_u64(f[nf - 1], fl[nf - 1], &out->t1);
        if (ok && nf == 3) {
            uint64_t ignored;
            ok = names_parse_u64(f[1], fl[1], &ignored);
        }
        out->t2 = out->t1;
    }
    return ok;
}

int tdb_tsname_parse(const char *name, struct tdb_tsname *out)
{
    memset(out, 0, sizeof *out);
    if (!name)
        return TDB_E_CORRUPT;
    size_t len;
    const char *s = tdb_last_component(name, &len);
    /* Without the extension (from the last '.'). */
    for (size_t i = len; i > 0; i--) {
        if (s[i - 1] == '.') {
            len = i - 1;
            break;
        }
    }
    if (len < 2 || s[0] != '_' || s[1] != '_')
        return TDB_E_CORRUPT;
    struct names_fields x;
    if (!names_split(s, len, &x))
        return TDB_E_CORRUPT;
    if (!names_read_fields(&x, out) || out->t1 > out->t2) {
        memset(out, 0, sizeof *out);
        return TDB_E_CORRUPT;
    }
    return 0;
}

bool tdb_tsname_times(const char *name, uint64_t *t1, uint64_t *t2)
{
    uint64_t v[2] = {0, 0};
    const char *q = name;
    if (strncmp(q, "__", 2))
        return false;
    q += 2;
    for (int i = 0; i < 2; i++) {
        if (*q < '0' || *q > '9')
            return false;
        while (*q >= '0' && *q <= '9') {
            if (!tdb_mul_ok(v[i], 10, &v[i]) ||
                !tdb_add_ok(v[i], (uint64_t)(*q - '0'), &v[i]))
                return false;
            q++;
        }
        if (*q++ != '_')
            return false;
    }
    *t1 = v[0];
    *t2 = v[1];
    return true;
}

void tdb_tsname_make(char *out, size_t cap, uint64_t t1, uint64_t t2,
                     const uint8_t rnd[16], uint32_t version)
{
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
    if (version)
        snprintf(out, cap, "__%" PRIu64 "_%" PRIu64 "_%s_%" PRIu32, t1, t2,
                 hex, version);
    else
        snprintf(out, cap, "__%" PRIu64 "_%" PRIu64 "_%s", t1, t2, hex);
}

static void names_mark_of(const uint8_t first[8], uint64_t t1, uint64_t t2,
                          uint8_t out[8])
{
    static const char tag[] = "tiledbfs: distinct cells";
    uint8_t msg[sizeof tag - 1 + 8 + 16], md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    memcpy(msg, tag, sizeof tag - 1);
    memcpy(msg + sizeof tag - 1, first, 8);
    for (int i = 0; i < 8; i++) {
        msg[sizeof tag - 1 + 8 + i] = (uint8_t)(t1 >> (8 * i));
        msg[sizeof tag - 1 + 16 + i] = (uint8_t)(t2 >> (8 * i));
    }
    if (!EVP_Digest(msg, sizeof msg, md, &mdlen, EVP_sha256(), NULL) ||
        mdlen < 8)
        memset(md, 0, 8); /* (cannot fail with the built-in digest) */
    memcpy(out, md, 8);
}

void tdb_tsname_mark(uint8_t rnd[16], uint64_t t1, uint64_t t2)
{
    names_mark_of(rnd, t1, t2, rnd + 8);
}

bool tdb_tsname_marked(const struct tdb_tsname *ts)
{
    uint8_t u[16], want[8];
    if (ts->era < 2 || strlen(ts->uuid) != 32)
        return false;
    for (int i = 0; i < 32; i++) {
        char c = ts->uuid[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return false;
        u[i / 2] = (uint8_t)(i % 2 ? u[i / 2] << 4 | v : v);
    }
    names_mark_of(u, ts->t1, ts->t2, want);
    return !memcmp(u + 8, want, 8);
}

/* ------------------------------------------------------ clock and random */

uint64_t tdb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int tdb_random(void *out, size_t n, struct tdb_error *err)
{
    uint8_t *p = out;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (got == n)
        return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    got = 0;
    while (fd >= 0 && got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (fd >= 0)
        close(fd);
    return got == n ? 0 : tdb_err(err, TDB_E_IO, "no random bytes "
                                  "(getrandom and /dev/urandom failed)");
}
