/* io_s3_xml.c: the XML of S3's answers (expat): ListObjectsV2 listings
 * and Error bodies, and the TDB_E_* code and message of an answer. */
#include "core/core.h"
#include "core/io_s3_local.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

/* ----------------------------------------------------------------- XML */

static const char *s3_xml_parent(struct s3_xml *x)
{
    return x->depth >= 2 && x->depth - 2 < 8 ? x->stack[x->depth - 2] : "";
}

static void XMLCALL s3_xml_start(void *arg, const XML_Char *name,
                                 const XML_Char **attrs)
{
    struct s3_xml *x = arg;
    if (x->depth < 8 && !(x->stack[x->depth] = strdup(name)))
        x->fail = TDB_E_NOMEM;
    if (x->depth == 0 && !strcmp(name, "Error"))
        x->is_error = true;
    x->depth++;
    x->text.len = 0;
}

static char *s3_xml_text(struct s3_xml *x)
{
    return strndup(x->text.len ? (const char *)x->text.data : "", x->text.len);
}

static void s3_xml_add(struct s3_xml *x, const char *full, bool is_dir,
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
        struct s3_dent *ne = realloc(x->e, nc * sizeof *ne);
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

static void XMLCALL s3_xml_end(void *arg, const XML_Char *name)
{
    struct s3_xml *x = arg;
    const char *parent = s3_xml_parent(x);
    char **slot = NULL;
    if (!strcmp(name, "Key") && !strcmp(parent, "Contents"))
        slot = &x->key;
    else if (!strcmp(name, "ETag") && !strcmp(parent, "Contents"))
        slot = &x->etag;
    else if (!strcmp(name, "NextContinuationToken") && x->depth == 2)
        slot = &x->token;
    else if (!strcmp(name, "UploadId") && x->depth == 2)
        slot = &x->upload_id;   /* InitiateMultipartUploadResult */
    else if (!strcmp(name, "ETag") && x->depth == 2 && !x->is_error)
        slot = &x->result_etag; /* CopyObjectResult, CopyPartResult */
    else if (!strcmp(name, "Code") && x->is_error && x->depth == 2)
        slot = &x->code;
    else if (!strcmp(name, "Message") && x->is_error && x->depth == 2)
        slot = &x->message;
    if (slot) {
        free(*slot);
        if (!(*slot = s3_xml_text(x)))
            x->fail = TDB_E_NOMEM;
    } else if (!strcmp(name, "Size") && !strcmp(parent, "Contents")) {
        char *t = s3_xml_text(x), *end = NULL;
        errno = 0;
        x->size = t ? strtoull(t, &end, 10) : 0;
        if (!t || errno || end == t || *end)
            x->fail = t ? TDB_E_CORRUPT : TDB_E_NOMEM;
        free(t);
    } else if (!strcmp(name, "IsTruncated") && x->depth == 2) {
        x->truncated = x->text.len == 4 && !memcmp(x->text.data, "true", 4);
    } else if (!strcmp(name, "Contents") && x->depth == 2) {
        x->nkeys++;
        if (x->key)
            s3_xml_add(x, x->key, false, x->size, &x->etag);
        free(x->key);
        x->key = NULL;
        free(x->etag);
        x->etag = NULL;
        x->size = 0;
    } else if (!strcmp(name, "Prefix") && !strcmp(parent, "CommonPrefixes")) {
        char *t = s3_xml_text(x);
        if (!t)
            x->fail = TDB_E_NOMEM;
        else
            s3_xml_add(x, t, true, 0, NULL);
        free(t);
    }
    x->depth--;
    if (x->depth < 8) {
        free(x->stack[x->depth]);
        x->stack[x->depth] = NULL;
    }
    x->text.len = 0;
}

static void XMLCALL s3_xml_chars(void *arg, const XML_Char *s, int len)
{
    struct s3_xml *x = arg;
    if (x->text.len + (size_t)len > (1u << 20) ||
        tdb_buf_append(&x->text, s, (size_t)len))
        x->fail = TDB_E_NOMEM;
}

/* Parses body into x (entries named relative to `prefix`).
 * @return 0, TDB_E_CORRUPT (not XML) or TDB_E_NOMEM. */
int tdb_s3_xml_parse(struct s3_xml *x, const struct tdb_buf *body,
                        const char *prefix)
{
    memset(x, 0, sizeof *x);
    x->prefix = prefix ? prefix : "";
    x->plen = strlen(x->prefix);
    if (!(x->xp = XML_ParserCreate("UTF-8")))
        return TDB_E_NOMEM;
    XML_SetUserData(x->xp, x);
    XML_SetElementHandler(x->xp, s3_xml_start, s3_xml_end);
    XML_SetCharacterDataHandler(x->xp, s3_xml_chars);
    if (body->len > INT_MAX)
        return TDB_E_CORRUPT;
    if (XML_Parse(x->xp, body->len ? (const char *)body->data : "",
                  (int)body->len, 1) != XML_STATUS_OK && !x->fail)
        x->fail = TDB_E_CORRUPT;
    return x->fail;
}

void tdb_s3_xml_free(struct s3_xml *x)
{
    if (x->xp)
        XML_ParserFree(x->xp);
    for (int i = 0; i < 8; i++)
        free(x->stack[i]);
    tdb_s3_dents_free(x->e, x->n);
    free(x->key);
    free(x->etag);
    free(x->token);
    free(x->upload_id);
    free(x->result_etag);
    free(x->code);
    free(x->message);
    tdb_buf_free(&x->text);
    memset(x, 0, sizeof *x);
}

/* -------------------------------------------------------------- errors */

/* The TDB_E_* code of an answer: 2xx 0, 404 TDB_E_NOENT, else TDB_E_IO;
 * with err, a message naming the key, the status and S3's error code. */
int tdb_s3_status(struct s3 *s, struct s3_call *c, struct tdb_error *err)
{
    if (c->cc != CURLE_OK)
        return tdb_err(err, TDB_E_IO, "s3://%s/%s: %s: %s", s->bucket,
                       c->key ? c->key : "", curl_easy_strerror(c->cc),
                       c->curl_msg);
    if (c->status >= 200 && c->status < 300)
        return 0;
    int code = c->status == 404 ? TDB_E_NOENT : TDB_E_IO;
    if (!err)
        return code;
    struct s3_xml x;
    tdb_s3_xml_parse(&x, &c->mem, NULL);
    tdb_err(err, code, "s3://%s/%s: %s %s: HTTP %ld%s%s%s%s", s->bucket,
            c->key ? c->key : "", c->method, c->key ? "" : "(bucket)",
            c->status, x.code ? " " : "", x.code ? x.code : "",
            x.message ? ": " : "", x.message ? x.message : "");
    tdb_s3_xml_free(&x);
    return code;
}
