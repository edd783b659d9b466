/* test_azure.c: the Azure Blob Storage codec (format/azure/): Shared Key's
 * string to sign byte for byte and signatures computed apart (Python's
 * hmac and base64), account keys, dates, connection strings and the
 * chain of options and environment, List Blobs and Error answers (real
 * ones from Azurite 3.35, and hostile ones), block ids and the Put Block
 * List body.  That Azurite accepts these signatures was checked by hand
 * against a running Azurite; these tests need no server. */
#include "../unit.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "azure/azure.h"

#define DATE "Tue, 01 Dec 2026 12:00:00 GMT"

static bool eq(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

static struct tdb_buf body_of(const char *s)
{
    struct tdb_buf b = {(uint8_t *)s, strlen(s), strlen(s) + 1, true};
    return b;
}

/* The development key, decoded. */
static unsigned char *dev_key(size_t *len)
{
    unsigned char *k = NULL;
    CHECK_EQ_INT(tdb_az_key_decode(TDB_AZ_DEV_KEY, &k, len), 0);
    CHECK_EQ_INT(*len, 64);
    return k;
}

/* ------------------------------------------------------------- signing */

/* Put Blob of an empty body, path-style as Azurite takes it: the empty
 * Content-Length line, the doubled account, x-ms-* headers lower-cased,
 * trimmed, folded and sorted. */
static void test_sts_put_empty(void)
{
    struct tdb_store_pair h[] = {
        {"x-ms-version", "2021-08-06"},
        {"Content-Type", "application/octet-stream"},
        {"X-MS-Date", DATE},
        {"Content-Length", "0"},
        {"x-ms-blob-type", "  BlockBlob  "},
        {"x-ms-meta-note", "a   b\t c"},
        {"Host", "127.0.0.1:10123"},
    };
    struct tdb_az_request rq = {"PUT", "/devstoreaccount1/cont1/arr/a%20b.tdb",
                                NULL, 0, h, 7};
    static const char want[] =
        "PUT\n\n\n\n\napplication/octet-stream\n\n\n\n\n\n\n"
        "x-ms-blob-type:BlockBlob\n"
        "x-ms-date:" DATE "\n"
        "x-ms-meta-note:a b c\n"
        "x-ms-version:2021-08-06\n"
        "/devstoreaccount1/devstoreaccount1/cont1/arr/a%20b.tdb";
    char *sts = tdb_az_string_to_sign(&rq, "devstoreaccount1");
    CHECK(eq(sts, want));
    free(sts);

    /* the same with 10 bytes: the length is signed */
    h[3].value = "10";
    sts = tdb_az_string_to_sign(&rq, "devstoreaccount1");
    CHECK(sts && !strncmp(sts, "PUT\n\n\n10\n\napplication/octet-stream\n", 35));
    free(sts);
}

/* The signature of that request, computed apart with Python:
 * base64.b64encode(hmac.new(base64.b64decode(DEV_KEY), sts.encode(),
 * hashlib.sha256).digest()). */
static void test_sign_vector(void)
{
    struct tdb_store_pair h[] = {
        {"x-ms-version", "2021-08-06"},
        {"Content-Type", "application/octet-stream"},
        {"X-MS-Date", DATE},
        {"Content-Length", "0"},
        {"x-ms-blob-type", "  BlockBlob  "},
        {"x-ms-meta-note", "a   b\t c"},
    };
    struct tdb_az_request rq = {"PUT", "/devstoreaccount1/cont1/arr/a%20b.tdb",
                                NULL, 0, h, 6};
    size_t kl;
    unsigned char *k = dev_key(&kl);
    char auth[128];
    CHECK_EQ_INT(tdb_az_sign(auth, sizeof auth, &rq, "devstoreaccount1", k,
                             kl), 0);
    CHECK(eq(auth, "SharedKey devstoreaccount1:"
                   "Tn0jWuVDSbMiz2BgUmlvcDCBiKVWtxi51atIRRlSLTI="));
    /* one byte of the key changed: another signature */
    k[0] ^= 1;
    CHECK_EQ_INT(tdb_az_sign(auth, sizeof auth, &rq, "devstoreaccount1", k,
                             kl), 0);
    CHECK(!eq(auth, "SharedKey devstoreaccount1:"
                    "Tn0jWuVDSbMiz2BgUmlvcDCBiKVWtxi51atIRRlSLTI="));
    /* too small an output is an error, not a cut value */
    CHECK_EQ_INT(tdb_az_sign(auth, 40, &rq, "devstoreaccount1", k, kl),
                 TDB_E_INVAL);
    CHECK(auth[0] == 0);
    CHECK_EQ_INT(tdb_az_sign(auth, sizeof auth, &rq, "devstoreaccount1",
                             NULL, 0), TDB_E_INVAL);
    explicit_bzero(k, kl);
    free(k);
}

/* List Blobs: the query decoded, names lower-cased and sorted, a marker
 * holding '+' and '=' as it is (Python computed the signature). */
static void test_sign_list_query(void)
{
    struct tdb_store_pair q[] = {
        {"restype", "container"}, {"comp", "list"}, {"prefix", "arr/"},
        {"delimiter", "/"}, {"maxresults", "2"},
        {"marker", "arr/plus+sign=eq"},
    };
    struct tdb_store_pair h[] = {
        {"x-ms-date", DATE},
        {"x-ms-version", "2021-08-06"},
    };
    struct tdb_az_request rq = {"GET", "/devstoreaccount1/cont1", q, 6, h, 2};
    static const char want[] =
        "GET\n\n\n\n\n\n\n\n\n\n\n\n"
        "x-ms-date:" DATE "\nx-ms-version:2021-08-06\n"
        "/devstoreaccount1/devstoreaccount1/cont1\ncomp:list\ndelimiter:/\n"
        "marker:arr/plus+sign=eq\nmaxresults:2\nprefix:arr/\n"
        "restype:container";
    char *sts = tdb_az_string_to_sign(&rq, "devstoreaccount1");
    CHECK(eq(sts, want));
    free(sts);
    size_t kl;
    unsigned char *k = dev_key(&kl);
    char auth[128];
    CHECK_EQ_INT(tdb_az_sign(auth, sizeof auth, &rq, "devstoreaccount1", k,
                             kl), 0);
    CHECK(eq(auth, "SharedKey devstoreaccount1:"
                   "WkpqH/L934fesUL7gkoX9GOQWnLJXbt0gbBoJ4DwcHc="));
    free(k);
}

/* A ranged GET, host-style, of a UTF-8 name, with another key ("account"
 * "key" as bytes; Python computed the signature). */
static void test_sign_range(void)
{
    struct tdb_store_pair h[] = {
        {"Range", "bytes=0-9"},
        {"x-ms-version", "2021-08-06"},
        {"x-ms-date", DATE},
    };
    struct tdb_az_request rq = {"GET", "/mycontainer/%C3%A9t%C3%A9.tdb", NULL,
                                0, h, 3};
    unsigned char *k;
    size_t kl;
    CHECK_EQ_INT(tdb_az_key_decode("YWNjb3VudGtleQ==", &k, &kl), 0);
    CHECK_EQ_INT(kl, 10);
    CHECK_MEM(k, "accountkey", 10);
    char *sts = tdb_az_string_to_sign(&rq, "myaccount");
    CHECK(eq(sts, "GET\n\n\n\n\n\n\n\n\n\n\nbytes=0-9\n"
                  "x-ms-date:" DATE "\nx-ms-version:2021-08-06\n"
                  "/myaccount/mycontainer/%C3%A9t%C3%A9.tdb"));
    free(sts);
    char auth[128];
    CHECK_EQ_INT(tdb_az_sign(auth, sizeof auth, &rq, "myaccount", k, kl), 0);
    CHECK(eq(auth, "SharedKey myaccount:"
                   "VrYxmXFTAfkTJecWF3C/4e8/5S3aUF5utBgJFPptp5w="));
    free(k);
}

/* Every standard header on its line; Date empty beside x-ms-date, signed
 * without it; several values of one query name sorted and joined; one
 * x-ms-* header sent twice joined in order; an empty path is "/". */
static void test_sts_lines(void)
{
    struct tdb_store_pair h[] = {
        {"range", "bytes=1-2"},
        {"IF-MATCH", "\"0x8D1\""},
        {"If-None-Match", "*"},
        {"If-Modified-Since", "Mon, 30 Nov 2026 00:00:00 GMT"},
        {"If-Unmodified-Since", "Wed, 02 Dec 2026 00:00:00 GMT"},
        {"Content-Encoding", "gzip"},
        {"Content-Language", "en"},
        {"Content-MD5", "MD5=="},
        {"Content-Length", " 5 "},
        {"Content-Type", "text/plain"},
        {"Date", DATE},
        {"x-ms-meta-b", "2"},
        {"x-ms-meta-a", "1"},
        {"x-ms-meta-b", "3"},
    };
    struct tdb_store_pair q[] = {
        {"Include", "snapshots"}, {"include", "metadata"}, {"empty", NULL},
    };
    struct tdb_az_request rq = {"GET", "", q, 3, h, 14};
    char *sts = tdb_az_string_to_sign(&rq, "acct");
    CHECK(eq(sts, "GET\ngzip\nen\n5\nMD5==\ntext/plain\n" DATE "\n"
                  "Mon, 30 Nov 2026 00:00:00 GMT\n\"0x8D1\"\n*\n"
                  "Wed, 02 Dec 2026 00:00:00 GMT\nbytes=1-2\n"
                  "x-ms-meta-a:1\nx-ms-meta-b:2,3\n"
                  "/acct/\nempty:\ninclude:metadata,snapshots"));
    free(sts);
    struct tdb_store_pair h2[] = {{"Date", DATE}, {"x-ms-date", DATE}};
    struct tdb_az_request rq2 = {"DELETE", "/c/b", NULL, 0, h2, 2};
    sts = tdb_az_string_to_sign(&rq2, "acct");
    CHECK(eq(sts, "DELETE\n\n\n\n\n\n\n\n\n\n\n\n"
                  "x-ms-date:" DATE "\n/acct/c/b"));
    free(sts);
}

/* Keys: padding of 0, 1 and 2, blanks around, and what is not base64. */
static void test_key_decode(void)
{
    unsigned char *k;
    size_t n;
    CHECK_EQ_INT(tdb_az_key_decode("YWJj", &k, &n), 0);
    CHECK(n == 3 && !memcmp(k, "abc", 3));
    free(k);
    CHECK_EQ_INT(tdb_az_key_decode(" YWJjZA==\n", &k, &n), 0);
    CHECK(n == 4 && !memcmp(k, "abcd", 4));
    free(k);
    CHECK_EQ_INT(tdb_az_key_decode("YWJjZGU=", &k, &n), 0);
    CHECK(n == 5 && !memcmp(k, "abcde", 5));
    free(k);
    const char *bad[] = {"", "   ", "YWJ", "YW=j", "====", "YWJj*A==",
                         "YQ==YWJj", "YWJjZ===", "YW Jj"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        k = (unsigned char *)"x";
        CHECK_EQ_INT(tdb_az_key_decode(bad[i], &k, &n), TDB_E_INVAL);
        CHECK(k == NULL && n == 0);
    }
}

static void test_date(void)
{
    char d[32];
    tdb_az_date(1796126400, d);
    CHECK(eq(d, DATE));
    tdb_az_date(0, d);
    CHECK(eq(d, "Thu, 01 Jan 1970 00:00:00 GMT"));
    tdb_az_date(951782400 + 86399, d);   /* a leap day's last second */
    CHECK(eq(d, "Tue, 29 Feb 2000 23:59:59 GMT"));
    tdb_az_date(INT64_MAX, d);
    CHECK(eq(d, ""));
}

/* ---------------------------------------------------- connection strings */

/* An account's string; lines, blanks, keys in any case, values holding
 * '='; a SAS; a key and a SAS. */
static void check_connstr_forms(void)
{
    struct tdb_az_config c;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_az_connstr(&c, "DefaultEndpointsProtocol=https;"
                 "AccountName=myacct;AccountKey=YWNjb3VudGtleQ==;"
                 "EndpointSuffix=core.windows.net", &err), 0);
    CHECK(eq(c.account, "myacct"));
    CHECK(c.keylen == 10 && !memcmp(c.key, "accountkey", 10));
    CHECK(eq(c.endpoint, "https://myacct.blob.core.windows.net"));
    CHECK(c.sas == NULL);
    tdb_az_config_free(&c);
    CHECK(c.account == NULL && c.key == NULL && c.endpoint == NULL);
    /* lines, blanks, keys in any case, values holding '=' */
    CHECK_EQ_INT(tdb_az_connstr(&c, "\n  accountname = abc \r\n"
                 "ACCOUNTKEY=YWJjZA==\n\n;endpointsuffix=core.chinacloudapi.cn"
                 "\ndefaultendpointsprotocol=HTTP\n", &err), 0);
    CHECK(eq(c.account, "abc") && c.keylen == 4);
    CHECK(eq(c.endpoint, "http://abc.blob.core.chinacloudapi.cn"));
    tdb_az_config_free(&c);
    /* a SAS, its '?' dropped; the account named by the endpoint's host */
    CHECK_EQ_INT(tdb_az_connstr(&c, "BlobEndpoint=https://acct2.blob.core."
                 "windows.net;SharedAccessSignature=?sv=2021-08-06&ss=b&srt="
                 "co&sp=rl&sig=ab%2Bc%3D", &err), 0);
    CHECK(eq(c.account, "acct2") && c.key == NULL);
    CHECK(eq(c.sas, "sv=2021-08-06&ss=b&srt=co&sp=rl&sig=ab%2Bc%3D"));
    CHECK(eq(c.endpoint, "https://acct2.blob.core.windows.net"));
    tdb_az_config_free(&c);
    /* a key and a SAS: the key signs */
    CHECK_EQ_INT(tdb_az_connstr(&c, "AccountName=abc;AccountKey=YWJj;"
                 "SharedAccessSignature=sv=1&sig=x", &err), 0);
    CHECK(c.key != NULL && c.sas == NULL);
    tdb_az_config_free(&c);
}

/* Azurite's strings: its documented one and UseDevelopmentStorage. */
static void check_connstr_dev(void)
{
    struct tdb_az_config c;
    struct tdb_error err = {0};
    size_t kl;
    unsigned char *dk = dev_key(&kl);
    /* Azurite's string, as its documentation gives it: BlobEndpoint's
     * trailing '/' dropped, the other services' endpoints ignored */
    CHECK_EQ_INT(tdb_az_connstr(&c, "DefaultEndpointsProtocol=http;"
                 "AccountName=devstoreaccount1;AccountKey=" TDB_AZ_DEV_KEY ";"
                 "BlobEndpoint=http://127.0.0.1:10123/devstoreaccount1/;"
                 "QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;"
                 "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;",
                 &err), 0);
    CHECK(eq(c.account, "devstoreaccount1"));
    CHECK(c.keylen == kl && !memcmp(c.key, dk, kl));
    CHECK(eq(c.endpoint, "http://127.0.0.1:10123/devstoreaccount1"));
    tdb_az_config_free(&c);
    CHECK_EQ_INT(tdb_az_connstr(&c, "UseDevelopmentStorage=true", &err), 0);
    CHECK(eq(c.account, TDB_AZ_DEV_ACCOUNT));
    CHECK(c.keylen == kl && !memcmp(c.key, dk, kl));
    CHECK(eq(c.endpoint, "http://127.0.0.1:10000/devstoreaccount1"));
    tdb_az_config_free(&c);
    free(dk);
}

static void test_connstr(void)
{
    struct tdb_az_config c;
    struct tdb_error err = {0};
    check_connstr_forms();
    check_connstr_dev();
    struct {
        const char *text, *msg;
    } bad[] = {
        {"AccountKey=YWJj;", "no AccountName"},
        {"", "no AccountName"},
        {"BlobEndpoint=http://127.0.0.1:10000/x", "no AccountName"},
        {"AccountName=abc;AccountKey=c2VjcmV0*bad", "AccountKey is not base64"},
        {"AccountName=abc;c2VjcmV0", "part 2 is not Key=Value"},
        {"AccountName=abc;DefaultEndpointsProtocol=ftp", "ftp"},
        {"AccountName=My_Account", "AccountName=My_Account"},
        {"AccountName=ab", "not 3 to 24"},
        {"AccountName=abc;BlobEndpoint=127.0.0.1:10000", "not an http"},
        {"AccountName=abc;BlobEndpoint=http:///x", "no host"},
        {"AccountName=abc;SharedAccessSignature=sv=1 &sig=x", "blank"},
        {"AccountName=abc;UseDevelopmentStorage=yes", "UseDevelopmentStorage"},
        {"AccountName=abc;EndpointSuffix=a/b", "EndpointSuffix"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        CHECK_EQ_INT(tdb_az_connstr(&c, bad[i].text, &err), TDB_E_INVAL);
        CHECK(strstr(err.msg, bad[i].msg) != NULL);
        CHECK(strstr(err.msg, "c2VjcmV0") == NULL);   /* no secret said */
        CHECK(c.account == NULL && c.key == NULL && c.endpoint == NULL);
    }
}

static void clear_env(void)
{
    unsetenv("AZURE_STORAGE_CONNECTION_STRING");
    unsetenv("AZURE_STORAGE_ACCOUNT");
    unsetenv("AZURE_STORAGE_KEY");
    unsetenv("AZURE_STORAGE_SAS_TOKEN");
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Environment variables: an account alone is anonymous; a SAS token;
 * a key, which signs. */
static void check_env_account(void)
{
    struct tdb_az_config c;
    struct tdb_error err = {0};
    setenv("AZURE_STORAGE_ACCOUNT", "envacct", 1);
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, NULL, &err), 0);
    CHECK(eq(c.account, "envacct") && c.key == NULL && c.sas == NULL);
    CHECK(eq(c.endpoint, "https://envacct.blob.core.windows.net"));
    tdb_az_config_free(&c);
    setenv("AZURE_STORAGE_SAS_TOKEN", "?sv=2021-08-06&sig=s", 1);
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, NULL, &err), 0);
    CHECK(eq(c.sas, "sv=2021-08-06&sig=s") && c.key == NULL);
    tdb_az_config_free(&c);
    setenv("AZURE_STORAGE_KEY", "YWNjb3VudGtleQ==", 1);
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, NULL, &err), 0);
    CHECK(c.keylen == 10 && !memcmp(c.key, "accountkey", 10));
    CHECK(c.sas == NULL);   /* the key signs */
    tdb_az_config_free(&c);
}

/* The account option: another account's key is not used; a key that is
 * not base64. */
static void check_account_option(void)
{
    struct tdb_az_config c;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, "optacct", NULL, &err), 0);
    CHECK(eq(c.account, "optacct") && c.key == NULL && c.sas == NULL);
    CHECK(eq(c.endpoint, "https://optacct.blob.core.windows.net"));
    tdb_az_config_free(&c);
    unsetenv("AZURE_STORAGE_ACCOUNT");
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, "optacct", NULL, &err), 0);
    CHECK(eq(c.account, "optacct") && c.keylen == 10);
    tdb_az_config_free(&c);
    setenv("AZURE_STORAGE_KEY", "not base64!", 1);
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, "optacct", NULL, &err),
                 TDB_E_INVAL);
    CHECK(eq(err.msg, "AZURE_STORAGE_KEY is not base64"));
    CHECK(c.account == NULL && c.key == NULL);
    setenv("AZURE_STORAGE_KEY", "YWNjb3VudGtleQ==", 1);
    setenv("AZURE_STORAGE_ACCOUNT", "envacct", 1);
}

/* A connection string wins over the account's variables; the endpoint
 * option replaces its BlobEndpoint; one naming no account takes the
 * option's. */
static void check_connstr_env(void)
{
    struct tdb_az_config c;
    struct tdb_error err = {0};
    setenv("AZURE_STORAGE_CONNECTION_STRING", "AccountName=csacct;"
           "AccountKey=YWJj;BlobEndpoint=https://csacct.example.org/", 1);
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, NULL, &err), 0);
    CHECK(eq(c.account, "csacct") && c.keylen == 3 && c.sas == NULL);
    CHECK(eq(c.endpoint, "https://csacct.example.org"));
    tdb_az_config_free(&c);
    /* the endpoint option replaces its BlobEndpoint */
    CHECK_EQ_INT(tdb_az_config_load(&c, "http://127.0.0.1:10123/csacct//",
                                    "csacct", NULL, &err), 0);
    CHECK(eq(c.endpoint, "http://127.0.0.1:10123/csacct"));
    tdb_az_config_free(&c);
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, "other", NULL, &err),
                 TDB_E_INVAL);
    CHECK(strstr(err.msg, "account=other") && strstr(err.msg, "csacct"));
    CHECK_EQ_INT(tdb_az_config_load(&c, "ftp://x", NULL, NULL, &err),
                 TDB_E_INVAL);
    CHECK(strstr(err.msg, "endpoint=ftp://x") != NULL);
    setenv("AZURE_STORAGE_CONNECTION_STRING", "AccountName=csacct;"
           "AccountKey=c2VjcmV0!", 1);
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, NULL, &err), TDB_E_INVAL);
    CHECK(eq(err.msg, "AZURE_STORAGE_CONNECTION_STRING: connection string: "
                      "AccountKey is not base64"));
    /* a connection string naming no account takes the option's */
    setenv("AZURE_STORAGE_CONNECTION_STRING", "BlobEndpoint=http://127.0.0.1:"
           "10123/sasacct;SharedAccessSignature=sv=1&sig=z", 1);
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, NULL, &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, "no storage account") != NULL);
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, "sasacct", NULL, &err), 0);
    CHECK(eq(c.account, "sasacct") && eq(c.sas, "sv=1&sig=z") && !c.key);
    CHECK(eq(c.endpoint, "http://127.0.0.1:10123/sasacct"));
    tdb_az_config_free(&c);
}

/* A credentials file wins over the environment. */
static void check_creds_file(void)
{
    struct tdb_az_config c;
    struct tdb_error err = {0};
    char dir[] = "/tmp/tiledbfs-test-azure.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[300], missing[300];
    snprintf(file, sizeof file, "%s/creds", dir);
    snprintf(missing, sizeof missing, "%s/none", dir);
    put_file(file, "not a connection string\n");
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, file, &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, file) && strstr(err.msg, "part 1"));
    put_file(file, "UseDevelopmentStorage=true\n");
    CHECK_EQ_INT(tdb_az_config_load(&c, "http://127.0.0.1:10123/"
                                    "devstoreaccount1", NULL, file, &err), 0);
    CHECK(eq(c.account, "devstoreaccount1") && c.keylen == 64);
    CHECK(eq(c.endpoint, "http://127.0.0.1:10123/devstoreaccount1"));
    tdb_az_config_free(&c);
    put_file(file, "AccountName=fileacct\nAccountKey=YWJjZA==\n");
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, file, &err), 0);
    CHECK(eq(c.account, "fileacct") && c.keylen == 4);
    CHECK(eq(c.endpoint, "https://fileacct.blob.core.windows.net"));
    tdb_az_config_free(&c);
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, missing, &err),
                 TDB_E_INVAL);
    CHECK(strstr(err.msg, missing) && strstr(err.msg, "No such file"));
    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, dir, &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, dir) && strstr(err.msg, "a folder"));
    unlink(file);
    rmdir(dir);
}

/* The options, then a credentials file or AZURE_STORAGE_CONNECTION_STRING,
 * then AZURE_STORAGE_ACCOUNT and its key or SAS. */
static void test_config_load(void)
{
    struct tdb_az_config c;
    struct tdb_error err = {0};
    clear_env();

    CHECK_EQ_INT(tdb_az_config_load(&c, NULL, NULL, NULL, &err), TDB_E_INVAL);
    CHECK(eq(err.msg, "azure://: no storage account (AZURE_STORAGE_ACCOUNT, "
                      "AZURE_STORAGE_CONNECTION_STRING or -o account=)"));
    check_env_account();
    check_account_option();
    check_connstr_env();
    check_creds_file();
    clear_env();
}

/* ------------------------------------------------------------------ XML */

/* The first page of a List Blobs of Azurite 3.35 (prefix=arr/,
 * delimiter=/, maxresults=2): two folders and a NextMarker. */
static const char az_page1[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?><Enumer"
    "ationResults ServiceEndpoint=\"http://127.0.0.1:10123/devstoreaccoun"
    "t1\" ContainerName=\"cont1\"><Prefix>arr/</Prefix><Marker/><MaxResul"
    "ts>2</MaxResults><Delimiter>/</Delimiter><Blobs><BlobPrefix><Name>ar"
    "r/__fragments/</Name></BlobPrefix><BlobPrefix><Name>arr/__meta/</Nam"
    "e></BlobPrefix></Blobs><NextMarker>arr/__meta/m1</NextMarker></Enume"
    "rationResults>";

/* Its second page (marker=arr/__meta/m1): a folder and a blob. */
static const char az_page2[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?><Enumer"
    "ationResults ServiceEndpoint=\"http://127.0.0.1:10123/devstoreaccoun"
    "t1\" ContainerName=\"cont1\"><Prefix>arr/</Prefix><Marker>arr/__meta"
    "/m1</Marker><MaxResults>2</MaxResults><Delimiter>/</Delimiter><Blobs"
    "><BlobPrefix><Name>arr/__schema/</Name></BlobPrefix><Blob><Name>arr/"
    "a b.tdb</Name><Properties><Creation-Time>Wed, 02 Dec 2026 12:39:25 G"
    "MT</Creation-Time><Last-Modified>Wed, 02 Dec 2026 12:39:25 GMT</Last"
    "-Modified><Etag>0x2345FD83EB904E0</Etag><Content-Length>10</Content-"
    "Length><Content-Type>application/octet-stream</Content-Type><Content"
    "-MD5>eB5eJF1ptWaXm4bijSPyxw==</Content-MD5><BlobType>BlockBlob</Blob"
    "Type><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</Lease"
    "State><ServerEncrypted>true</ServerEncrypted><AccessTier>Hot</Access"
    "Tier><AccessTierInferred>true</AccessTierInferred><AccessTierChangeT"
    "ime>Wed, 02 Dec 2026 12:39:25 GMT</AccessTierChangeTime></Properties"
    "></Blob></Blobs><NextMarker>arr/a b.tdb</NextMarker></EnumerationRes"
    "ults>";

/* Azurite's answer to a GET of a blob that is not there. */
static const char az_not_found[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<Erro"
    "r>\n  <Code>BlobNotFound</Code>\n  <Message>The specified blob does "
    "not exist.\nRequestId:553e3bff-748d-4627-b070-f136a7f21e27\nTime:202"
    "6-12-02T12:39:25.578Z</Message>\n</Error>";

static void test_xml_azurite(void)
{
    struct tdb_store_answer a;
    struct tdb_buf b = body_of(az_page1);
    CHECK_EQ_INT(tdb_az_xml_parse(&a, &b, "arr/"), 0);
    CHECK_EQ_INT(a.n, 2);
    CHECK_EQ_INT(a.nkeys, 0);
    CHECK(a.n == 2 && eq(a.e[0].name, "__fragments") && a.e[0].is_dir &&
          eq(a.e[1].name, "__meta") && a.e[1].is_dir && !a.e[1].etag);
    CHECK(a.truncated && eq(a.token, "arr/__meta/m1") && !a.is_error);
    tdb_store_answer_free(&a);

    b = body_of(az_page2);
    CHECK_EQ_INT(tdb_az_xml_parse(&a, &b, "arr/"), 0);
    CHECK_EQ_INT(a.n, 2);
    CHECK_EQ_INT(a.nkeys, 1);
    CHECK(a.n == 2 && eq(a.e[0].name, "__schema") && a.e[0].is_dir);
    CHECK(a.n == 2 && eq(a.e[1].name, "a b.tdb") && !a.e[1].is_dir &&
          a.e[1].size == 10 && eq(a.e[1].etag, "\"0x2345FD83EB904E0\""));
    CHECK(a.truncated && eq(a.token, "arr/a b.tdb"));
    tdb_store_answer_free(&a);

    b = body_of(az_not_found);
    CHECK_EQ_INT(tdb_az_xml_parse(&a, &b, NULL), 0);
    CHECK(a.is_error && eq(a.code, "BlobNotFound") && a.n == 0);
    static const char msg[] = "The specified blob does not exist.\n"
                              "RequestId:553e3bff-";
    CHECK(a.message && !strncmp(a.message, msg, sizeof msg - 1));
    tdb_store_answer_free(&a);
}

/* Names, sizes, etags, the last page, Azure's BOM, and the paths that
 * count. */
static void test_xml_listing(void)
{
    static const char body[] =
        "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?>"
        "<EnumerationResults ContainerName=\"c\"><Prefix>p/</Prefix><Blobs>"
        "<Blob><Name>p/x&amp;y&lt;z&gt;.tdb</Name><Properties>"
        "<Content-Length>18446744073709551615</Content-Length>"
        "<Etag>\"0x8DQUOTED\"</Etag></Properties></Blob>"
        "<Blob><Name>p/\xC3\xA9t\xC3\xA9</Name><Properties>"
        "<Content-Length>0</Content-Length></Properties></Blob>"
        "<Blob><Name Encoded=\"true\">p/%E2%9C%93%20x</Name><Properties>"
        "<Content-Length>3</Content-Length><Etag>0x1</Etag></Properties>"
        "</Blob>"
        "<Blob><Name>p/empty-etag</Name><Properties><Etag>\"\"</Etag>"
        "</Properties></Blob>"
        "<Blob><Name>p/crlf-etag</Name><Properties><Etag>\"a&#13;&#10;X: y"
        "\"</Etag></Properties></Blob>"
        "<Blob><Name>p/hns</Name><Properties><Content-Length>0"
        "</Content-Length><ResourceType>directory</ResourceType>"
        "</Properties></Blob>"
        "<Blob><Properties><Content-Length>4</Content-Length></Properties>"
        "</Blob>"
        "<BlobPrefix><Name>p/sub/</Name></BlobPrefix>"
        "</Blobs><Name>p/not-a-blob</Name>"
        "<Blob><Name>p/outside-blobs</Name></Blob>"
        "<Blobs><Blob><Properties><Name>p/inside-properties</Name>"
        "</Properties></Blob></Blobs>"
        "<NextMarker/></EnumerationResults>";
    struct tdb_store_answer a;
    struct tdb_buf b = body_of(body);
    CHECK_EQ_INT(tdb_az_xml_parse(&a, &b, "p/"), 0);
    CHECK_EQ_INT(a.n, 7);
    CHECK_EQ_INT(a.nkeys, 8);
    if (a.n == 7) {
        CHECK(eq(a.e[0].name, "x&y<z>.tdb") && a.e[0].size == UINT64_MAX &&
              eq(a.e[0].etag, "\"0x8DQUOTED\""));
        CHECK(eq(a.e[1].name, "\xC3\xA9t\xC3\xA9") && a.e[1].size == 0 &&
              a.e[1].etag == NULL);
        CHECK(eq(a.e[2].name, "\xE2\x9C\x93 x") && a.e[2].size == 3 &&
              eq(a.e[2].etag, "\"0x1\""));
        CHECK(eq(a.e[3].name, "empty-etag") && a.e[3].etag == NULL);
        CHECK(eq(a.e[4].name, "crlf-etag") && a.e[4].etag == NULL);
        CHECK(eq(a.e[5].name, "hns") && a.e[5].is_dir);
        CHECK(eq(a.e[6].name, "sub") && a.e[6].is_dir && a.e[6].size == 0);
    }
    CHECK(!a.truncated && a.token == NULL && !a.is_error);
    tdb_store_answer_free(&a);
}

/* Names a hostile or broken server sends are left out: empty, "." and
 * ".." parts, names outside the prefix, the prefix's own marker, broken
 * encodings. */
static void test_xml_hostile_names(void)
{
    static const char body[] =
        "<EnumerationResults><Blobs>"
        "<Blob><Name>p/ok</Name></Blob>"
        "<Blob><Name>p/..</Name></Blob>"
        "<Blob><Name>p/a/../b</Name></Blob>"
        "<Blob><Name>p/./c</Name></Blob>"
        "<Blob><Name>p//d</Name></Blob>"
        "<Blob><Name>p/</Name></Blob>"
        "<Blob><Name>q/outside</Name></Blob>"
        "<Blob><Name Encoded=\"true\">p/%2E%2E</Name></Blob>"
        "<Blob><Name Encoded=\"true\">p/bad%G1</Name></Blob>"
        "<Blob><Name Encoded=\"true\">p/nul%00x</Name></Blob>"
        "<Blob><Name Encoded=\"true\">p/cut%4</Name></Blob>"
        "<Blob><Name Encoded=\"false\">p/%41</Name></Blob>"
        "<BlobPrefix><Name>p/../</Name></BlobPrefix>"
        "<BlobPrefix><Name>p/g/</Name></BlobPrefix>"
        "</Blobs></EnumerationResults>";
    struct tdb_store_answer a;
    struct tdb_buf b = body_of(body);
    CHECK_EQ_INT(tdb_az_xml_parse(&a, &b, "p/"), 0);
    CHECK_EQ_INT(a.nkeys, 12);
    CHECK_EQ_INT(a.n, 3);
    if (a.n == 3)
        CHECK(eq(a.e[0].name, "ok") && eq(a.e[1].name, "%41") &&
              eq(a.e[2].name, "g") && a.e[2].is_dir);
    tdb_store_answer_free(&a);
}

/* Sizes that are not numbers, bodies that are not XML, DOCTYPEs, depth
 * and text beyond the bounds. */
static void test_xml_bad(void)
{
    struct tdb_store_answer a;
    const char *corrupt[] = {
        "",
        "502 Bad Gateway",
        "<html><body>502 Bad Gateway</body>",
        "<EnumerationResults><Blobs><Blob><Name>p/a</Name><Properties>"
        "<Content-Length>-1</Content-Length></Properties></Blob></Blobs>"
        "</EnumerationResults>",
        "<EnumerationResults><Blobs><Blob><Name>p/a</Name><Properties>"
        "<Content-Length>12a</Content-Length></Properties></Blob></Blobs>"
        "</EnumerationResults>",
        "<EnumerationResults><Blobs><Blob><Name>p/a</Name><Properties>"
        "<Content-Length></Content-Length></Properties></Blob></Blobs>"
        "</EnumerationResults>",
        "<EnumerationResults><Blobs><Blob><Name>p/a</Name><Properties>"
        "<Content-Length>18446744073709551616</Content-Length></Properties>"
        "</Blob></Blobs></EnumerationResults>",
        "<!DOCTYPE r [<!ENTITY e \"aaaaaaaaaa\">]><EnumerationResults><Blobs>"
        "<Blob><Name>p/&e;</Name></Blob></Blobs></EnumerationResults>",
    };
    for (size_t i = 0; i < sizeof corrupt / sizeof *corrupt; i++) {
        struct tdb_buf b = body_of(corrupt[i]);
        CHECK_EQ_INT(tdb_az_xml_parse(&a, &b, "p/"), TDB_E_CORRUPT);
        tdb_store_answer_free(&a);
    }

    /* a Blob 20 levels down is not one */
    struct tdb_buf deep = {0};
    for (int i = 0; i < 20; i++)
        CHECK(tdb_buf_append(&deep, "<EnumerationResults><Blobs>", 27) == 0);
    CHECK(tdb_buf_append(&deep, "<Blob><Name>p/x</Name></Blob>", 29) == 0);
    for (int i = 0; i < 20; i++)
        CHECK(tdb_buf_append(&deep, "</Blobs></EnumerationResults>", 29) == 0);
    CHECK_EQ_INT(tdb_az_xml_parse(&a, &deep, "p/"), 0);
    CHECK(a.n == 0 && a.nkeys == 0);
    tdb_store_answer_free(&a);
    tdb_buf_free(&deep);

    /* a name of more than 1 MiB */
    struct tdb_buf big = {0};
    CHECK(tdb_buf_append(&big, "<EnumerationResults><Blobs><Blob><Name>p/",
                         41) == 0);
    for (int i = 0; i < (1 << 20) / 64 + 1; i++)
        CHECK(tdb_buf_append(&big, "0123456789abcdef0123456789abcdef"
                             "0123456789abcdef0123456789abcdef", 64) == 0);
    CHECK(tdb_buf_append(&big, "</Name></Blob></Blobs></EnumerationResults>",
                         43) == 0);
    CHECK_EQ_INT(tdb_az_xml_parse(&a, &big, "p/"), TDB_E_NOMEM);
    CHECK(a.n == 0);
    tdb_store_answer_free(&a);
    tdb_buf_free(&big);
}

/* Error bodies: Azure's (with a BOM, and an authentication detail) and
 * an Error's Code elsewhere not taken. */
static void test_xml_errors(void)
{
    static const char auth[] =
        "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><Error>"
        "<Code>AuthenticationFailed</Code><Message>Server failed to "
        "authenticate the request.\nRequestId:1\nTime:2026-12-01T12:00:00Z"
        "</Message><AuthenticationErrorDetail>The MAC signature found in "
        "the HTTP request 'x' is not the same as any computed signature."
        "</AuthenticationErrorDetail></Error>";
    struct tdb_store_answer a;
    struct tdb_buf b = body_of(auth);
    CHECK_EQ_INT(tdb_az_xml_parse(&a, &b, NULL), 0);
    CHECK(a.is_error && eq(a.code, "AuthenticationFailed"));
    CHECK(a.message && !strncmp(a.message, "Server failed to authenticate",
                                29));
    tdb_store_answer_free(&a);

    b = body_of("<EnumerationResults><Code>X</Code><Error><Code>Y</Code>"
                "</Error></EnumerationResults>");
    CHECK_EQ_INT(tdb_az_xml_parse(&a, &b, NULL), 0);
    CHECK(!a.is_error && a.code == NULL);
    tdb_store_answer_free(&a);
}

/* --------------------------------------------------------------- blocks */

static void test_block_ids(void)
{
    char id[80], id2[80];
    tdb_az_block_id("up1", 1, id);
    CHECK(eq(id, "dXAxLTAwMDAwMQ=="));   /* base64("up1-000001") */
    static const char tag[] = "0123456789012345678901234567890123456789";
    tdb_az_block_id(tag, 50000, id);
    CHECK(eq(id, "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDEyMzQ1Njc4OS0w"
                 "NTAwMDA="));
    /* a longer tag is cut to its first 40 bytes */
    tdb_az_block_id("0123456789012345678901234567890123456789-and-more", 50000,
                    id2);
    CHECK(eq(id, id2));
    /* one length for every block of a blob */
    size_t len = 0;
    for (unsigned n = 1; n <= 50000; n += 7) {
        tdb_az_block_id("tag-7f3a", n, id);
        if (n == 1)
            len = strlen(id);
        CHECK_EQ_INT(strlen(id), len);
    }
    tdb_az_block_id(tag, 999999, id);
    CHECK(strlen(id) < 80);
    tdb_az_block_id(tag, UINT32_MAX, id);
    CHECK(strlen(id) < 80);
}

static void test_block_list(void)
{
    struct tdb_buf b = {0};
    CHECK_EQ_INT(tdb_az_block_list(&b, "up1", 3), 0);
    static const char want[] =
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>"
        "<Latest>dXAxLTAwMDAwMQ==</Latest><Latest>dXAxLTAwMDAwMg==</Latest>"
        "<Latest>dXAxLTAwMDAwMw==</Latest></BlockList>";
    CHECK_EQ_INT(b.len, sizeof want - 1);
    CHECK(b.len == sizeof want - 1 && !memcmp(b.data, want, b.len));
    tdb_buf_free(&b);
    CHECK_EQ_INT(tdb_az_block_list(&b, "up1", 0), 0);
    CHECK(b.len == 61 && !memcmp(b.data, "<?xml version=\"1.0\" encoding="
                                 "\"utf-8\"?><BlockList></BlockList>", 61));
    tdb_buf_free(&b);
}

int main(void)
{
    RUN(test_sts_put_empty);
    RUN(test_sign_vector);
    RUN(test_sign_list_query);
    RUN(test_sign_range);
    RUN(test_sts_lines);
    RUN(test_key_decode);
    RUN(test_date);
    RUN(test_connstr);
    RUN(test_config_load);
    RUN(test_xml_azurite);
    RUN(test_xml_listing);
    RUN(test_xml_hostile_names);
    RUN(test_xml_bad);
    RUN(test_xml_errors);
    RUN(test_block_ids);
    RUN(test_block_list);
    return unit_done();
}
