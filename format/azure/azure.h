/* azure.h: the Azure Blob Storage protocol as bytes, knowing nothing of
 * I/O threads or HTTP clients: Shared Key signing (sign.c), where and as
 * whom a mount connects (config.c: connection strings, the environment,
 * options), and the XML of answers and of Put Block List (xml.c).
 * format/objstore/ runs the requests and calls these.
 *
 * Conventions are the engine's (tiledb_format.h): 0 or a negative TDB_E_*
 * code; strings returned are the caller's to free; nothing here prints,
 * keeps global state or says a secret in an error message. */
#ifndef TDB_AZURE_H
#define TDB_AZURE_H

#include "core/core.h"
#include "core/store.h"

/* The service version requests name (x-ms-version): signed by the rules
 * below (those of 2015-02-21 and later), served by Azure and by Azurite
 * 3.35 (which takes 2009-04-14 to 2025-11-05). */
#define TDB_AZ_VERSION "2021-08-06"

/* ------------------------------------------------------ signing (sign.c) */

/* A request to sign with Shared Key (Blob service, version 2009-09-19
 * and later; strings as of 2015-02-21, where a Content-Length of 0 signs
 * as an empty line). */
struct tdb_az_request {
    const char *method;                 /* "GET", "PUT", "HEAD", "DELETE" */
    const char *path;                   /* the URL's path as sent, encoded:
                                         * "/devstoreaccount1/c/a%20b"
                                         * (path-style) or "/c/a%20b";
                                         * NULL or "": "/" */
    const struct tdb_store_pair *query; /* the query parameters, decoded
                                         * (a NULL value: empty) */
    size_t nquery;
    const struct tdb_store_pair *hdr;   /* every header sent, any case and
                                         * order (x-ms-date, x-ms-version,
                                         * Content-Length, Range, ...) */
    size_t nhdr;
};

/* The string Shared Key signs, as Microsoft's "Authorize with Shared
 * Key" spells it:
 *   VERB, Content-Encoding, Content-Language, Content-Length (empty when
 *   absent or "0"), Content-MD5, Content-Type, Date (empty when an
 *   x-ms-date header is sent: that one is signed), If-Modified-Since,
 *   If-Match, If-None-Match, If-Unmodified-Since, Range, each followed
 *   by "\n" (values trimmed of surrounding blanks; a header sent twice:
 *   its values joined with ',');
 *   then every x-ms-* header as "name:value\n", the name lower-cased,
 *   the value trimmed and its runs of spaces, tabs, CR and LF made one
 *   space, sorted by name (strcmp; one name sent twice: one line, the
 *   values joined with ',' in the order sent);
 *   then "/" ACCOUNT PATH, and for each query parameter, names
 *   lower-cased and sorted, "\nname:value" with the decoded value (one
 *   name several times: its values sorted and joined with ',').
 * A path-style URL (Azurite's /devstoreaccount1/container/blob) so names
 * the account twice.  @return a new string, or NULL (ENOMEM). */
char *tdb_az_string_to_sign(const struct tdb_az_request *rq,
                            const char *account);

/* The Authorization value "SharedKey ACCOUNT:BASE64SIG" of rq into out
 * (cap bytes), the signature being base64(HMAC-SHA256(key, string to
 * sign)).  key: the decoded account key (tdb_az_key_decode).  @return 0,
 * TDB_E_INVAL (out too small: out is then ""; no key), TDB_E_NOMEM. */
int tdb_az_sign(char *out, size_t cap, const struct tdb_az_request *rq,
                const char *account, const unsigned char *key, size_t keylen);

/* Decodes an account key from base64 (surrounding blanks ignored; its
 * length a multiple of 4, '=' only as padding).  @return 0 with *key a
 * new buffer (free it zeroed: explicit_bzero then free) of *len bytes,
 * TDB_E_INVAL (empty or not base64), TDB_E_NOMEM. */
int tdb_az_key_decode(const char *b64, unsigned char **key, size_t *len);

/* n bytes as base64 with padding into out (room for 4 * ((n + 2) / 3) + 1
 * bytes, NUL-terminated). */
void tdb_az_base64(const unsigned char *d, size_t n, char *out);

/* The RFC 1123 date x-ms-date wants ("Tue, 01 Dec 2026 12:00:00 GMT") of
 * t, in seconds since the epoch, into out (NUL-terminated, never locale
 * dependent).  A t gmtime cannot take writes "". */
void tdb_az_date(int64_t t, char out[32]);

/* -------------------------------------------------- configuration (config.c) */

/* Where and as whom: every string owned. */
struct tdb_az_config {
    char *account;          /* AccountName */
    unsigned char *key;     /* the decoded AccountKey, or NULL */
    size_t keylen;
    char *sas;              /* a SAS token's query (no leading '?'), or NULL */
    char *endpoint;         /* the blob service URL, no trailing '/':
                             * "https://ACCOUNT.blob.core.windows.net", or a
                             * BlobEndpoint's ("http://127.0.0.1:10000/
                             * devstoreaccount1") */
};

/* Azurite's well-known development account, as Microsoft publishes it. */
#define TDB_AZ_DEV_ACCOUNT "devstoreaccount1"
#define TDB_AZ_DEV_KEY                                                     \
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFP" \
    "TOtr/KBHBeksoGMGw=="
#define TDB_AZ_DEV_ENDPOINT "http://127.0.0.1:10000/devstoreaccount1"

/* Parses a connection string into cfg (zeroed first; on failure left
 * empty): "Key=Value" parts separated by ';' or newlines, blank parts
 * ignored, keys case-insensitive, a value all after the first '=' (it
 * may hold more), blanks around keys and values dropped.  Keys read:
 * DefaultEndpointsProtocol (http or https; default https), AccountName,
 * AccountKey (base64), BlobEndpoint (its trailing '/' dropped),
 * EndpointSuffix (default core.windows.net: the endpoint is then
 * PROTOCOL://ACCOUNT.blob.SUFFIX), SharedAccessSignature (a leading '?'
 * dropped), UseDevelopmentStorage (true: Azurite's TDB_AZ_DEV_* account,
 * key and endpoint, unless the string names its own); every other key
 * (QueueEndpoint, TableEndpoint, FileEndpoint, ...) is ignored.  Without
 * AccountName, a BlobEndpoint whose host is ACCOUNT.blob.* names it.
 * An AccountKey makes a SharedAccessSignature beside it dropped (the key
 * signs).
 * @return 0, TDB_E_INVAL with err naming what is wrong (never a secret's
 * bytes), TDB_E_NOMEM. */
int tdb_az_connstr(struct tdb_az_config *cfg, const char *text,
                   struct tdb_error *err);

/* Fills cfg (zeroed first; on failure left empty) as Azure's tools find
 * it, first found wins:
 *  1. the options, each may be NULL: `endpoint` (-o endpoint=) replaces
 *     any other endpoint; `account` (-o account=) names the account (a
 *     connection string naming another one: TDB_E_INVAL);
 *     `credentials_file` (-o credentials_file=) a file whose text is a
 *     connection string (one part a line, or ';' separated);
 *  2. AZURE_STORAGE_CONNECTION_STRING (when no credentials_file);
 *  3. without a connection string: AZURE_STORAGE_ACCOUNT, with
 *     AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN (a leading '?'
 *     dropped), which are left unused when AZURE_STORAGE_ACCOUNT names
 *     another account than the account option.
 * The endpoint defaults to https://ACCOUNT.blob.core.windows.net.
 * Neither key nor SAS: anonymous requests (a public container).  Both:
 * the key signs (the SAS is dropped).  Errors (TDB_E_INVAL): no account anywhere ("azure://:
 * no storage account (AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_CONNECTION_
 * STRING or -o account=)"), an account name that is not 3 to 24
 * lower-case letters and digits, a key that is not base64 (naming where
 * it came from), a SAS or endpoint that cannot be sent, a
 * credentials_file that cannot be read (naming it and why).  TDB_E_NOMEM
 * too. */
int tdb_az_config_load(struct tdb_az_config *cfg, const char *endpoint,
                       const char *account, const char *credentials_file,
                       struct tdb_error *err);

/* Frees what cfg holds, zeroing the key and the SAS first; cfg is left
 * empty.  NULL: nothing. */
void tdb_az_config_free(struct tdb_az_config *cfg);

/* ------------------------------------------------------------ XML (xml.c) */

/* Parses an answer's body into a (tdb_store_answer_init(a, prefix) first;
 * entries named relative to prefix, tdb_store_answer_add's rules):
 *  - an EnumerationResults of List Blobs: each Blobs/Blob an entry (Name;
 *    Properties/Content-Length its size; Properties/Etag its etag, stored
 *    quoted as the ETag header gives it, "\"0x8D...\"" (none when empty
 *    or holding a control character); a Name with
 *    Encoded="true" is percent-decoded; a ResourceType of "directory", a
 *    hierarchical account's folder, makes it a folder), each
 *    Blobs/BlobPrefix/Name a folder; nkeys counts the Blob elements; a
 *    non-empty NextMarker sets truncated and token;
 *  - an Error: is_error, code and message (Code, Message).
 * The elements are matched by their whole path from the root; at most 8
 * levels are read and 1 MiB of text in one element (beyond: TDB_E_NOMEM),
 * a DOCTYPE is refused (TDB_E_CORRUPT: Azure sends none).  Free a with
 * tdb_store_answer_free whatever the outcome.  @return 0, TDB_E_CORRUPT
 * (not XML, a size that is not a number), TDB_E_NOMEM. */
int tdb_az_xml_parse(struct tdb_store_answer *a, const struct tdb_buf *body,
                     const char *prefix);

/* The block id of block n of an upload tagged `tag` (its first 40 bytes
 * only; the same tag for every block of one blob): the base64 of
 * "TAG-%06u", so that every id of one blob has one length, as Azure
 * requires, for n < 1,000,000 (a blob has 50,000 blocks at most).  Sent
 * percent-encoded in the blockid parameter (tdb_store_encode), signed
 * decoded.  out: room for 80 bytes. */
void tdb_az_block_id(const char *tag, unsigned n, char out[80]);

/* The body of Put Block List committing blocks 1..n of tag, in order:
 * <?xml version="1.0" encoding="utf-8"?><BlockList><Latest>ID</Latest>
 * ...</BlockList> (no blanks between elements).  body: zeroed or empty
 * (appended to).  @return 0 with the bytes in *body (not NUL-terminated),
 * or TDB_E_NOMEM. */
int tdb_az_block_list(struct tdb_buf *body, const char *tag, unsigned n);

#endif
