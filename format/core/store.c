/* store.c: the words every object store shares (store.h). */
#include "core/store.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ encodings */

static bool store_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
           c == '~';
}

char *tdb_store_encode(const char *s, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = malloc(3 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (store_unreserved(*p) || (keep_slash && *p == '/')) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = 0;
    return out;
}

static int store_hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

ssize_t tdb_store_decode(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        int hi = i + 2 < n ? store_hex_value(s[i + 1]) : -1;
        int lo = i + 2 < n ? store_hex_value(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
            return -1;
        out[o++] = (char)(hi << 4 | lo);
        i += 2;
    }
    out[o] = 0;
    return (ssize_t)o;
}

struct store_kv {
    char *k, *v;
};

static int store_kv_cmp(const void *a, const void *b)
{
    const struct store_kv *x = a, *y = b;
    int c = strcmp(x->k, y->k);
    return c ? c : strcmp(x->v, y->v);
}

char *tdb_store_query(const struct tdb_store_pair *p, size_t n)
{
    struct store_kv *kv = calloc(n ? n : 1, sizeof *kv);
    struct tdb_buf b = {0};
    char *out = NULL;
    if (!kv)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!(kv[i].k = tdb_store_encode(p[i].name, false)) ||
            !(kv[i].v = tdb_store_encode(p[i].value ? p[i].value : "", false)))
            goto out;
    qsort(kv, n, sizeof *kv, store_kv_cmp);
    for (size_t i = 0; i < n; i++)
        if ((i && tdb_buf_append(&b, "&", 1)) ||
            tdb_buf_append(&b, kv[i].k, strlen(kv[i].k)) ||
            tdb_buf_append(&b, "=", 1) ||
            tdb_buf_append(&b, kv[i].v, strlen(kv[i].v)))
            goto out;
    if (!tdb_buf_append(&b, "", 1)) {
        out = (char *)b.data;
        b.data = NULL;
    }
out:
    for (size_t i = 0; i < n; i++) {
        free(kv[i].k);
        free(kv[i].v);
    }
    free(kv);
    tdb_buf_free(&b);
    return out;
}

void tdb_store_hex(const unsigned char *d, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[2 * n] = 0;
}

/* ------------------------------------------------------------- answers */

void tdb_store_dents_free(struct tdb_store_dent *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].name);
        free(e[i].etag);
    }
    free(e);
}

void tdb_store_answer_init(struct tdb_store_answer *a, const char *prefix)
{
    memset(a, 0, sizeof *a);
    a->prefix = prefix ? prefix : "";
    a->plen = strlen(a->prefix);
}

void tdb_store_answer_add(struct tdb_store_answer *x, const char *full, bool is_dir,
                          uint64_t size, char **etag)
{
    if (strncmp(full, x->prefix, x->plen))
        return;
    const char *name = full + x->plen;
    size_t l = strlen(name);
    if (is_dir && l && name[l - 1] == '/')
        l--;
    if (!l)     /* the folder's own marker object ("prefix/") */
        return;
    /* a name with an empty, "." or ".." part (a hostile or broken server:
     * S3 keys may hold them) names nothing a folder can show: left out */
    for (size_t i = 0; i <= l;) {
        const char *end = memchr(name + i, '/', l - i);
        size_t n = end ? (size_t)(end - (name + i)) : l - i;
        if (n == 0 || (n == 1 && name[i] == '.') ||
            (n == 2 && name[i] == '.' && name[i + 1] == '.'))
            return;
        i += n + 1;
    }
    if (x->n == x->cap) {
        size_t nc = x->cap ? 2 * x->cap : 64;
        struct tdb_store_dent *ne = realloc(x->e, nc * sizeof *ne);
        if (!ne) {
            x->fail = TDB_E_NOMEM;
            return;
        }
        x->e = ne;
        x->cap = nc;
    }
    if (!(x->e[x->n].name = strndup(name, l))) {
        x->fail = TDB_E_NOMEM;
        return;
    }
    x->e[x->n].is_dir = is_dir;
    x->e[x->n].size = size;
    x->e[x->n].etag = etag ? *etag : NULL;
    if (etag)
        *etag = NULL;
    x->n++;
}

void tdb_store_answer_free(struct tdb_store_answer *a)
{
    tdb_store_dents_free(a->e, a->n);
    free(a->token);
    free(a->upload_id);
    free(a->result_etag);
    free(a->code);
    free(a->message);
    a->e = NULL;
    a->n = a->cap = 0;
    a->token = a->upload_id = a->result_etag = a->code = a->message = NULL;
}

/* ------------------------------------------------------------ headers */

int tdb_store_header_add(struct curl_slist **hl, const char *name,
                         const char *value)
{
    char *line = NULL;
    if (asprintf(&line, "%s: %s", name, value) < 0)
        return TDB_E_NOMEM;
    struct curl_slist *nl = curl_slist_append(*hl, line);
    explicit_bzero(line, strlen(line));
    free(line);
    if (!nl)
        return TDB_E_NOMEM;
    *hl = nl;
    return 0;
}
