/* test_sign.c: the S3 backend's signing (format/s3/sign.c): AWS
 * Signature Version 4 against the worked examples of AWS's S3
 * documentation, and the encodings of paths and queries. */
#include "../unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "s3/s3.h"
#include "objstore/objstore.h"

/* The example account of AWS's S3 Signature Version 4 documentation
 * ("Examples: Signature Calculations"): its requests are dated
 * 20130524T000000Z, in us-east-1, to examplebucket.s3.amazonaws.com. */
#define EX_KEY_ID "AKIAIOSFODNN7EXAMPLE"

#define EX_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

#define EX_DATE "20130524T000000Z"

#define EX_HOST "examplebucket.s3.amazonaws.com"

#define EMPTY_SHA256 \
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static const char *sig_of(const char *auth)
{
    const char *p = strstr(auth, "Signature=");
    return p ? p + 10 : "";
}

/* tdb_s3_sigv4 with the request and the signer spelled out. */
static int sign(char *out, size_t cap, const char *method, const char *path,
                const char *query, const struct tdb_store_pair *hdr, size_t nhdr,
                const char *payload_hash, const char *amz_date,
                const char *region, const char *key_id, const char *secret)
{
    struct tdb_s3_request rq = {method, path, query, hdr, nhdr, payload_hash,
                                amz_date};
    struct tdb_s3_signer by = {region, key_id, secret};
    return tdb_s3_sigv4(out, cap, &rq, &by);
}

/* GET Object, bytes 0-9 of /test.txt. */
static void test_sigv4_get_range(void)
{
    struct tdb_store_pair h[] = {
        {"Range", "bytes=0-9"},
        {"Host", EX_HOST},
        {"x-amz-date", EX_DATE},
        {"x-amz-content-sha256", EMPTY_SHA256},
    };
    char auth[512];
    CHECK_EQ_INT(sign(auth, sizeof auth, "GET", "/test.txt", "", h, 4,
                       EMPTY_SHA256, EX_DATE, "us-east-1", EX_KEY_ID,
                       EX_SECRET), 0);
    CHECK(!strcmp(sig_of(auth), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170"
                                "aba48dd91039c6036bdb41"));
    CHECK(strstr(auth, "Credential=" EX_KEY_ID "/20130524/us-east-1/s3/"
                       "aws4_request") != NULL);
    CHECK(strstr(auth, "SignedHeaders=host;range;x-amz-content-sha256;"
                       "x-amz-date,") != NULL);
    /* one byte of the secret changed: another signature */
    CHECK_EQ_INT(sign(auth, sizeof auth, "GET", "/test.txt", "", h, 4,
                       EMPTY_SHA256, EX_DATE, "us-east-1", EX_KEY_ID,
                       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEz"), 0);
    CHECK(strcmp(sig_of(auth), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170"
                               "aba48dd91039c6036bdb41") != 0);
    /* too small an output is an error, not a cut string */
    CHECK_EQ_INT(sign(auth, 40, "GET", "/test.txt", "", h, 4,
                       EMPTY_SHA256, EX_DATE, "us-east-1", EX_KEY_ID,
                       EX_SECRET), TDB_E_INVAL);
}

/* PUT Object: "Welcome to Amazon S3." as /test$file.text (the '$' is
 * encoded in the path), with a Date and a storage class header. */
static void test_sigv4_put(void)
{
    const char *body = "Welcome to Amazon S3.";
    char hash[65];
    tdb_s3_sha256_hex(body, strlen(body), hash);
    CHECK(!strcmp(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034"
                        "a8b803f8b072"));
    char *path = tdb_store_encode("/test$file.text", true);
    CHECK(path && !strcmp(path, "/test%24file.text"));
    struct tdb_store_pair h[] = {
        {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-date", EX_DATE},
        {"host", EX_HOST},
        {"x-amz-content-sha256", hash},
    };
    char auth[512];
    CHECK_EQ_INT(sign(auth, sizeof auth, "PUT", path ? path : "", "",
                       h, 5, hash, EX_DATE, "us-east-1", EX_KEY_ID,
                       EX_SECRET), 0);
    CHECK(!strcmp(sig_of(auth), "98ad721746da40c64f1a55b78f14c238d841ea1380"
                                "cd77a1b5971af0ece108bd"));
    free(path);
}

/* GET Bucket (List Objects): ?max-keys=2&prefix=J, and ?lifecycle. */
static void test_sigv4_query(void)
{
    struct tdb_store_pair q[] = {{"prefix", "J"}, {"max-keys", "2"}};
    char *query = tdb_store_query(q, 2);
    CHECK(query && !strcmp(query, "max-keys=2&prefix=J"));
    struct tdb_store_pair h[] = {
        {"host", EX_HOST},
        {"x-amz-date", EX_DATE},
        {"x-amz-content-sha256", EMPTY_SHA256},
    };
    char auth[512];
    CHECK_EQ_INT(sign(auth, sizeof auth, "GET", "/", query ? query : "",
                       h, 3, EMPTY_SHA256, EX_DATE, "us-east-1",
                       EX_KEY_ID, EX_SECRET), 0);
    CHECK(!strcmp(sig_of(auth), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc5"
                                "9db6670ed5711ef69dc6f7"));
    free(query);
    struct tdb_store_pair lc[] = {{"lifecycle", NULL}};
    query = tdb_store_query(lc, 1);
    CHECK(query && !strcmp(query, "lifecycle="));
    CHECK_EQ_INT(sign(auth, sizeof auth, "GET", "/", query ? query : "",
                       h, 3, EMPTY_SHA256, EX_DATE, "us-east-1",
                       EX_KEY_ID, EX_SECRET), 0);
    CHECK(!strcmp(sig_of(auth), "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e"
                                "0f91ac7a200a0136783543"));
    free(query);
}

static void test_encode(void)
{
    char *a = tdb_store_encode("a b/c+d=~é", true);
    char *b = tdb_store_encode("arr/__fragments/", false);
    CHECK(a && !strcmp(a, "a%20b/c%2Bd%3D~%C3%A9"));
    CHECK(b && !strcmp(b, "arr%2F__fragments%2F"));
    free(a);
    free(b);
    /* names and values encoded, then sorted by name, then by value */
    struct tdb_store_pair q[] = {{"prefix", "a/b c"}, {"list-type", "2"},
                              {"delimiter", "/"}, {"b", "2"}, {"b", "1"}};
    char *query = tdb_store_query(q, 5);
    CHECK(query && !strcmp(query, "b=1&b=2&delimiter=%2F&list-type=2&"
                                  "prefix=a%2Fb%20c"));
    free(query);
    query = tdb_store_query(NULL, 0);
    CHECK(query && !strcmp(query, ""));
    free(query);
}

int main(void)
{
    tdb_s3_global_init();
    RUN(test_sigv4_get_range);
    RUN(test_sigv4_put);
    RUN(test_sigv4_query);
    RUN(test_encode);
    return unit_done();
}
