/* xml.c: the XML of Azure Blob Storage: List Blobs' EnumerationResults
 * and Error bodies read with expat into a tdb_store_answer, and what
 * tiledbfs writes: block ids and the body of Put Block List. */
#include "azure/azure.h"

#include <errno.h>
#include <expat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#define AZ_XML_DEPTH 8              /* levels of elements read */
#define AZ_XML_TEXT (1u << 20)      /* bytes of text in one element */

/* The elements the parser knows; any other is AZ_OTHER. */
enum az_el {
    AZ_OTHER,
    AZ_ENUM,            /* EnumerationResults */
    AZ_BLOBS,
    AZ_BLOB,
    AZ_PREFIX,          /* BlobPrefix */
    AZ_NAME,
    AZ_PROPS,           /* Properties */
    AZ_LENGTH,          /* Content-Length */
    AZ_ETAG,            /* Etag */
    AZ_RTYPE,           /* ResourceType */
    AZ_NEXT,            /* NextMarker */
    AZ_ERROR,
    AZ_CODE,
    AZ_MESSAGE,
};

static const char *const az_el_names[] = {
    [AZ_ENUM] = "EnumerationResults", [AZ_BLOBS] = "Blobs",
    [AZ_BLOB] = "Blob", [AZ_PREFIX] = "BlobPrefix", [AZ_NAME] = "Name",
    [AZ_PROPS] = "Properties", [AZ_LENGTH] = "Content-Length",
    [AZ_ETAG] = "Etag", [AZ_RTYPE] = "ResourceType",
    [AZ_NEXT] = "NextMarker", [AZ_ERROR] = "Error", [AZ_CODE] = "Code",
    [AZ_MESSAGE] = "Message",
};

/* The parser's state: the open elements, and the Blob being read. */
struct az_xml {
    XML_Parser xp;
    enum az_el stack[AZ_XML_DEPTH];
    int depth;                  /* may pass AZ_XML_DEPTH: those unread */
    struct tdb_buf text;        /* the current element's text */
    bool encoded;               /* the current Name has Encoded="true" */
    char *name, *etag;          /* the Blob's */
    uint64_t size;
    bool is_dir;
    struct tdb_store_answer *a;
};

static enum az_el az_el_of(const char *name)
{
    for (size_t i = 1; i < sizeof az_el_names / sizeof *az_el_names; i++)
        if (!strcmp(name, az_el_names[i]))
            return (enum az_el)i;
    return AZ_OTHER;
}

/* Whether the open elements are exactly the n given, from the root. */
static bool az_at(const struct az_xml *x, int n, const enum az_el *path)
{
    if (x->depth != n || n > AZ_XML_DEPTH)
        return false;
    for (int i = 0; i < n; i++)
        if (x->stack[i] != path[i])
            return false;
    return true;
}

#define AZ_AT(x, ...)                                                     \
    az_at((x), (int)(sizeof((enum az_el[]){__VA_ARGS__}) /                \
                     sizeof(enum az_el)),                                 \
          (enum az_el[]){__VA_ARGS__})

static void az_fail(struct az_xml *x, int code)
{
    if (!x->a->fail)
        x->a->fail = code;
    XML_StopParser(x->xp, XML_FALSE);
}

static void az_blob_reset(struct az_xml *x)
{
    free(x->name);
    free(x->etag);
    x->name = x->etag = NULL;
    x->size = 0;
    x->is_dir = false;
}

static void XMLCALL az_start(void *arg, const XML_Char *name,
                             const XML_Char **attrs)
{
    struct az_xml *x = arg;
    enum az_el el = az_el_of(name);
    if (x->depth == 0 && el == AZ_ERROR)
        x->a->is_error = true;
    if (x->depth < AZ_XML_DEPTH)
        x->stack[x->depth] = el;
    x->depth++;
    x->text.len = 0;
    x->encoded = false;
    if (el == AZ_NAME)
        for (size_t i = 0; attrs[i] && attrs[i + 1]; i += 2)
            if (!strcmp(attrs[i], "Encoded") && !strcmp(attrs[i + 1], "true"))
                x->encoded = true;
    if (AZ_AT(x, AZ_ENUM, AZ_BLOBS, AZ_BLOB))
        az_blob_reset(x);
}

static void XMLCALL az_chars(void *arg, const XML_Char *s, int len)
{
    struct az_xml *x = arg;
    if (x->text.len + (size_t)len > AZ_XML_TEXT ||
        tdb_buf_append(&x->text, s, (size_t)len))
        az_fail(x, TDB_E_NOMEM);
}

/* The current element's text, percent-decoded when it was Encoded.
 * @return a new string; NULL with *bad when an encoded name is broken
 * (a bad escape, or a NUL), else NULL on ENOMEM. */
static char *az_text(struct az_xml *x, bool *bad)
{
    const char *t = x->text.len ? (const char *)x->text.data : "";
    size_t n = x->text.len;
    *bad = false;
    if (!x->encoded)
        return strndup(t, n);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    if (tdb_store_decode(t, n, out) < 0) {
        free(out);
        *bad = true;
        return NULL;
    }
    return out;
}

/* Sets *slot to the current text.  @return false when it was left out. */
static bool az_take(struct az_xml *x, char **slot)
{
    bool bad;
    char *t = az_text(x, &bad);
    if (!t && !bad)
        az_fail(x, TDB_E_NOMEM);
    free(*slot);
    *slot = t;
    return t != NULL;
}

/* A Content-Length: digits only, within 64 bits. */
static void az_size(struct az_xml *x)
{
    uint64_t v = 0;
    const uint8_t *t = x->text.data;
    if (!x->text.len) {
        az_fail(x, TDB_E_CORRUPT);
        return;
    }
    for (size_t i = 0; i < x->text.len; i++) {
        if (t[i] < '0' || t[i] > '9' || !tdb_mul_ok(v, 10, &v) ||
            !tdb_add_ok(v, t[i] - '0', &v)) {
            az_fail(x, TDB_E_CORRUPT);
            return;
        }
    }
    x->size = v;
}

/* An Etag as the ETag header gives it: quoted.  An empty one, or one
 * with a control character (it may be sent back in If-Match), is none. */
static void az_etag(struct az_xml *x)
{
    free(x->etag);
    x->etag = NULL;
    size_t n = x->text.len;
    const char *t = (const char *)x->text.data;
    bool quoted = n >= 2 && t[0] == '"' && t[n - 1] == '"';
    if (!n || (quoted && n == 2))
        return;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
            return;
    if (!(x->etag = malloc(n + 3))) {
        az_fail(x, TDB_E_NOMEM);
        return;
    }
    if (quoted)
        snprintf(x->etag, n + 1, "%.*s", (int)n, t);
    else
        snprintf(x->etag, n + 3, "\"%.*s\"", (int)n, t);
}

static void XMLCALL az_end(void *arg, const XML_Char *name)
{
    struct az_xml *x = arg;
    struct tdb_store_answer *a = x->a;
    (void)name;
    if (AZ_AT(x, AZ_ENUM, AZ_BLOBS, AZ_BLOB, AZ_NAME)) {
        az_take(x, &x->name);
    } else if (AZ_AT(x, AZ_ENUM, AZ_BLOBS, AZ_BLOB, AZ_PROPS, AZ_LENGTH)) {
        az_size(x);
    } else if (AZ_AT(x, AZ_ENUM, AZ_BLOBS, AZ_BLOB, AZ_PROPS, AZ_ETAG)) {
        az_etag(x);
    } else if (AZ_AT(x, AZ_ENUM, AZ_BLOBS, AZ_BLOB, AZ_PROPS, AZ_RTYPE)) {
        x->is_dir = x->text.len == 9 && !memcmp(x->text.data, "directory", 9);
    } else if (AZ_AT(x, AZ_ENUM, AZ_BLOBS, AZ_BLOB)) {
        a->nkeys++;
        if (x->name)
            tdb_store_answer_add(a, x->name, x->is_dir,
                                 x->is_dir ? 0 : x->size, &x->etag);
        az_blob_reset(x);
    } else if (AZ_AT(x, AZ_ENUM, AZ_BLOBS, AZ_PREFIX, AZ_NAME)) {
        char *t = NULL;
        if (az_take(x, &t))
            tdb_store_answer_add(a, t, true, 0, NULL);
        free(t);
    } else if (AZ_AT(x, AZ_ENUM, AZ_NEXT)) {
        if (x->text.len && az_take(x, &a->token))
            a->truncated = true;
    } else if (AZ_AT(x, AZ_ERROR, AZ_CODE)) {
        az_take(x, &a->code);
    } else if (AZ_AT(x, AZ_ERROR, AZ_MESSAGE)) {
        az_take(x, &a->message);
    }
    x->depth--;
    x->text.len = 0;
    x->encoded = false;
}

/* Azure sends no DOCTYPE: one is a hostile body (entities). */
static void XMLCALL az_doctype(void *arg, const XML_Char *name,
                               const XML_Char *sysid, const XML_Char *pubid,
                               int has_internal_subset)
{
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal_subset;
    az_fail(arg, TDB_E_CORRUPT);
}

int tdb_az_xml_parse(struct tdb_store_answer *a, const struct tdb_buf *body,
                     const char *prefix)
{
    struct az_xml x = {.a = a};
    tdb_store_answer_init(a, prefix);
    if (body->len > INT_MAX)
        return a->fail = TDB_E_CORRUPT;
    if (!(x.xp = XML_ParserCreate("UTF-8")))
        return a->fail = TDB_E_NOMEM;
    XML_SetUserData(x.xp, &x);
    XML_SetElementHandler(x.xp, az_start, az_end);
    XML_SetCharacterDataHandler(x.xp, az_chars);
    XML_SetStartDoctypeDeclHandler(x.xp, az_doctype);
    if (XML_Parse(x.xp, body->len ? (const char *)body->data : "",
                  (int)body->len, 1) != XML_STATUS_OK && !a->fail)
        a->fail = TDB_E_CORRUPT;
    XML_ParserFree(x.xp);
    az_blob_reset(&x);
    tdb_buf_free(&x.text);
    return a->fail;
}

/* ---------------------------------------------------------------- blocks */

void tdb_az_block_id(const char *tag, unsigned n, char out[80])
{
    char raw[40 + 1 + 10 + 1];
    int len = snprintf(raw, sizeof raw, "%.40s-%06u", tag, n);
    tdb_az_base64((const unsigned char *)raw,
                  len < 0 ? 0 : (size_t)len, out);
}

int tdb_az_block_list(struct tdb_buf *body, const char *tag, unsigned n)
{
    static const char head[] =
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>";
    if (tdb_buf_append(body, head, sizeof head - 1))
        return TDB_E_NOMEM;
    for (unsigned i = 1; i <= n && i; i++) {
        char id[80];
        tdb_az_block_id(tag, i, id);
        if (tdb_buf_append(body, "<Latest>", 8) ||
            tdb_buf_append(body, id, strlen(id)) ||
            tdb_buf_append(body, "</Latest>", 9))
            return TDB_E_NOMEM;
    }
    return tdb_buf_append(body, "</BlockList>", 12) ? TDB_E_NOMEM : 0;
}
