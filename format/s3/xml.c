/* xml.c: the XML of S3's answers (expat): ListObjectsV2 listings,
 * multipart uploads' starts, copies' results and Error bodies. */
#include "core/core.h"
#include "s3/s3.h"

#include <errno.h>
#include <expat.h>
#include <limits.h>
#include <stdlib.h>

/* ----------------------------------------------------------------- XML */

/* The parser's state: the open elements, and the Contents being read. */
struct s3_xml {
    XML_Parser xp;
    char *stack[8];          /* names of the open elements */
    int depth;
    struct tdb_buf text;     /* character data of the current element */
    char *key;               /* Contents/Key */
    char *etag;              /* Contents/ETag */
    uint64_t size;           /* Contents/Size */
    struct tdb_store_answer *a;
};

static const char *s3_xml_parent(struct s3_xml *x)
{
    return x->depth >= 2 && x->depth - 2 < 8 ? x->stack[x->depth - 2] : "";
}

static void XMLCALL s3_xml_start(void *arg, const XML_Char *name,
                                 const XML_Char **attrs)
{
    struct s3_xml *x = arg;
    if (x->depth < 8 && !(x->stack[x->depth] = strdup(name)))
        x->a->fail = TDB_E_NOMEM;
    if (x->depth == 0 && !strcmp(name, "Error"))
        x->a->is_error = true;
    x->depth++;
    x->text.len = 0;
}

static char *s3_xml_text(struct s3_xml *x)
{
    return strndup(x->text.len ? (const char *)x->text.data : "", x->text.len);
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
        slot = &x->a->token;
    else if (!strcmp(name, "UploadId") && x->depth == 2)
        slot = &x->a->upload_id;   /* InitiateMultipartUploadResult */
    else if (!strcmp(name, "ETag") && x->depth == 2 && !x->a->is_error)
        slot = &x->a->result_etag; /* CopyObjectResult, CopyPartResult */
    else if (!strcmp(name, "Code") && x->a->is_error && x->depth == 2)
        slot = &x->a->code;
    else if (!strcmp(name, "Message") && x->a->is_error && x->depth == 2)
        slot = &x->a->message;
    if (slot) {
        free(*slot);
        if (!(*slot = s3_xml_text(x)))
            x->a->fail = TDB_E_NOMEM;
    } else if (!strcmp(name, "Size") && !strcmp(parent, "Contents")) {
        char *t = s3_xml_text(x), *end = NULL;
        errno = 0;
        x->size = t ? strtoull(t, &end, 10) : 0;
        if (!t || errno || end == t || *end)
            x->a->fail = t ? TDB_E_CORRUPT : TDB_E_NOMEM;
        free(t);
    } else if (!strcmp(name, "IsTruncated") && x->depth == 2) {
        x->a->truncated = x->text.len == 4 && !memcmp(x->text.data, "true", 4);
    } else if (!strcmp(name, "Contents") && x->depth == 2) {
        x->a->nkeys++;
        if (x->key)
            tdb_store_answer_add(x->a, x->key, false, x->size, &x->etag);
        free(x->key);
        x->key = NULL;
        free(x->etag);
        x->etag = NULL;
        x->size = 0;
    } else if (!strcmp(name, "Prefix") && !strcmp(parent, "CommonPrefixes")) {
        char *t = s3_xml_text(x);
        if (!t)
            x->a->fail = TDB_E_NOMEM;
        else
            tdb_store_answer_add(x->a, t, true, 0, NULL);
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
        x->a->fail = TDB_E_NOMEM;
}

int tdb_s3_xml_parse(struct tdb_store_answer *a, const struct tdb_buf *body,
                     const char *prefix)
{
    struct s3_xml x = {.a = a};
    tdb_store_answer_init(a, prefix);
    if (!(x.xp = XML_ParserCreate("UTF-8")))
        return a->fail = TDB_E_NOMEM;
    XML_SetUserData(x.xp, &x);
    XML_SetElementHandler(x.xp, s3_xml_start, s3_xml_end);
    XML_SetCharacterDataHandler(x.xp, s3_xml_chars);
    if (body->len > INT_MAX)
        a->fail = TDB_E_CORRUPT;
    else if (XML_Parse(x.xp, body->len ? (const char *)body->data : "",
                       (int)body->len, 1) != XML_STATUS_OK && !a->fail)
        a->fail = TDB_E_CORRUPT;
    XML_ParserFree(x.xp);
    for (int i = 0; i < 8; i++)
        free(x.stack[i]);
    free(x.key);
    free(x.etag);
    tdb_buf_free(&x.text);
    return a->fail;
}
