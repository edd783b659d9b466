/* test_s3.c: the S3 backend's signing (AWS Signature Version 4, against the
 * worked examples of AWS's S3 documentation), encodings, ini files of
 * ~/.aws and the configuration read from the environment (io_s3.c).  The
 * requests themselves are tested against a real server in
 * tests/py/test_s3.py. */
#include "unit.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/io_s3.h"

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

/* GET Object, bytes 0-9 of /test.txt. */
static void test_sigv4_get_range(void)
{
    struct tdb_s3_pair h[] = {
        {"Range", "bytes=0-9"},
        {"Host", EX_HOST},
        {"x-amz-date", EX_DATE},
        {"x-amz-content-sha256", EMPTY_SHA256},
    };
    char auth[512];
    CHECK_EQ_INT(tdb_s3_sigv4(auth, sizeof auth, "GET", "/test.txt", "", h, 4,
                              EMPTY_SHA256, EX_DATE, "us-east-1", EX_KEY_ID,
                              EX_SECRET), 0);
    CHECK(!strcmp(sig_of(auth), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170"
                                "aba48dd91039c6036bdb41"));
    CHECK(strstr(auth, "Credential=" EX_KEY_ID "/20130524/us-east-1/s3/"
                       "aws4_request") != NULL);
    CHECK(strstr(auth, "SignedHeaders=host;range;x-amz-content-sha256;"
                       "x-amz-date,") != NULL);
    /* one byte of the secret changed: another signature */
    CHECK_EQ_INT(tdb_s3_sigv4(auth, sizeof auth, "GET", "/test.txt", "", h, 4,
                              EMPTY_SHA256, EX_DATE, "us-east-1", EX_KEY_ID,
                              "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEz"), 0);
    CHECK(strcmp(sig_of(auth), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170"
                               "aba48dd91039c6036bdb41") != 0);
    /* too small an output is an error, not a cut string */
    CHECK_EQ_INT(tdb_s3_sigv4(auth, 40, "GET", "/test.txt", "", h, 4,
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
    char *path = tdb_s3_encode("/test$file.text", true);
    CHECK(path && !strcmp(path, "/test%24file.text"));
    struct tdb_s3_pair h[] = {
        {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-date", EX_DATE},
        {"host", EX_HOST},
        {"x-amz-content-sha256", hash},
    };
    char auth[512];
    CHECK_EQ_INT(tdb_s3_sigv4(auth, sizeof auth, "PUT", path ? path : "", "",
                              h, 5, hash, EX_DATE, "us-east-1", EX_KEY_ID,
                              EX_SECRET), 0);
    CHECK(!strcmp(sig_of(auth), "98ad721746da40c64f1a55b78f14c238d841ea1380"
                                "cd77a1b5971af0ece108bd"));
    free(path);
}

/* GET Bucket (List Objects): ?max-keys=2&prefix=J, and ?lifecycle. */
static void test_sigv4_query(void)
{
    struct tdb_s3_pair q[] = {{"prefix", "J"}, {"max-keys", "2"}};
    char *query = tdb_s3_query(q, 2);
    CHECK(query && !strcmp(query, "max-keys=2&prefix=J"));
    struct tdb_s3_pair h[] = {
        {"host", EX_HOST},
        {"x-amz-date", EX_DATE},
        {"x-amz-content-sha256", EMPTY_SHA256},
    };
    char auth[512];
    CHECK_EQ_INT(tdb_s3_sigv4(auth, sizeof auth, "GET", "/", query ? query : "",
                              h, 3, EMPTY_SHA256, EX_DATE, "us-east-1",
                              EX_KEY_ID, EX_SECRET), 0);
    CHECK(!strcmp(sig_of(auth), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc5"
                                "9db6670ed5711ef69dc6f7"));
    free(query);
    struct tdb_s3_pair lc[] = {{"lifecycle", NULL}};
    query = tdb_s3_query(lc, 1);
    CHECK(query && !strcmp(query, "lifecycle="));
    CHECK_EQ_INT(tdb_s3_sigv4(auth, sizeof auth, "GET", "/", query ? query : "",
                              h, 3, EMPTY_SHA256, EX_DATE, "us-east-1",
                              EX_KEY_ID, EX_SECRET), 0);
    CHECK(!strcmp(sig_of(auth), "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e"
                                "0f91ac7a200a0136783543"));
    free(query);
}

static void test_encode(void)
{
    char *a = tdb_s3_encode("a b/c+d=~é", true);
    char *b = tdb_s3_encode("arr/__fragments/", false);
    CHECK(a && !strcmp(a, "a%20b/c%2Bd%3D~%C3%A9"));
    CHECK(b && !strcmp(b, "arr%2F__fragments%2F"));
    free(a);
    free(b);
    /* names and values encoded, then sorted by name, then by value */
    struct tdb_s3_pair q[] = {{"prefix", "a/b c"}, {"list-type", "2"},
                              {"delimiter", "/"}, {"b", "2"}, {"b", "1"}};
    char *query = tdb_s3_query(q, 5);
    CHECK(query && !strcmp(query, "b=1&b=2&delimiter=%2F&list-type=2&"
                                  "prefix=a%2Fb%20c"));
    free(query);
    query = tdb_s3_query(NULL, 0);
    CHECK(query && !strcmp(query, ""));
    free(query);
}

static const char INI[] =
    "# a comment\n"
    "[default]\n"
    "aws_access_key_id = AKDEFAULT\n"
    "aws_secret_access_key=SECRET = with = signs \n"
    "\n"
    "; another comment\n"
    "[ profile dev ]\n"
    "region = eu-west-3\n"
    "s3 =\n"
    "  endpoint_url = http://nested.invalid\n"
    "  region = nested-region\n"
    "ENDPOINT_URL = http://127.0.0.1:9000\n"
    "region = eu-west-1\n"
    "[other]\r\n"
    "region = ap-south-1\r\n";

static void test_ini(void)
{
    char *v = NULL;
    size_t n = strlen(INI);
    CHECK_EQ_INT(tdb_s3_ini_get(INI, n, "default", "aws_access_key_id", &v), 0);
    CHECK(v && !strcmp(v, "AKDEFAULT"));
    free(v);
    /* the value runs to the end of the line, '=' and all, blanks dropped */
    CHECK_EQ_INT(tdb_s3_ini_get(INI, n, "default", "aws_secret_access_key",
                                &v), 0);
    CHECK(v && !strcmp(v, "SECRET = with = signs"));
    free(v);
    /* names are matched without case; the last value wins; indented
     * sub-settings are not the section's own */
    CHECK_EQ_INT(tdb_s3_ini_get(INI, n, "profile dev", "region", &v), 0);
    CHECK(v && !strcmp(v, "eu-west-1"));
    free(v);
    CHECK_EQ_INT(tdb_s3_ini_get(INI, n, "PROFILE DEV", "endpoint_url", &v), 0);
    CHECK(v && !strcmp(v, "http://127.0.0.1:9000"));
    free(v);
    /* CRLF line ends */
    CHECK_EQ_INT(tdb_s3_ini_get(INI, n, "other", "region", &v), 0);
    CHECK(v && !strcmp(v, "ap-south-1"));
    free(v);
    /* a key of another section, a missing section, a comment's words */
    CHECK_EQ_INT(tdb_s3_ini_get(INI, n, "default", "region", &v),
                 TDB_E_NOENT);
    CHECK(v == NULL);
    CHECK_EQ_INT(tdb_s3_ini_get(INI, n, "dev", "region", &v), TDB_E_NOENT);
    CHECK_EQ_INT(tdb_s3_ini_get(INI, n, "default", "# a comment", &v),
                 TDB_E_NOENT);
    CHECK_EQ_INT(tdb_s3_ini_get("", 0, "default", "region", &v), TDB_E_NOENT);
    /* text without a final newline */
    CHECK_EQ_INT(tdb_s3_ini_get("[a]\nk=v", 7, "a", "k", &v), 0);
    CHECK(v && !strcmp(v, "v"));
    free(v);
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

static void clear_env(void)
{
    static const char *const vars[] = {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
        "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
}

static bool eq(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

/* Credentials from the environment first, else the profile's files;
 * region and endpoint from the environment, else ~/.aws/config. */
static void test_config(void)
{
    char home[] = "/tmp/tiledbfs-test-s3.XXXXXX";
    CHECK(mkdtemp(home) != NULL);
    char aws[256], cred[300], conf[300];
    snprintf(aws, sizeof aws, "%s/.aws", home);
    snprintf(cred, sizeof cred, "%s/credentials", aws);
    snprintf(conf, sizeof conf, "%s/config", aws);
    CHECK(mkdir(aws, 0700) == 0);
    put_file(cred, "[default]\naws_access_key_id = K1\n"
                   "aws_secret_access_key = S1\n"
                   "[dev]\naws_access_key_id = K2\n"
                   "aws_secret_access_key = S2\naws_session_token = T2\n");
    put_file(conf, "[default]\nregion = eu-north-1\n"
                   "[profile dev]\nregion = eu-west-3\n"
                   "endpoint_url = http://127.0.0.1:4568\n");
    clear_env();
    setenv("HOME", home, 1);
    struct tdb_s3_config c;
    struct tdb_error err = {0};

    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), 0);
    CHECK(eq(c.access_key, "K1") && eq(c.secret_key, "S1"));
    CHECK(c.session_token == NULL && c.endpoint == NULL);
    CHECK(eq(c.region, "eu-north-1"));
    tdb_s3_config_free(&c);

    setenv("AWS_PROFILE", "dev", 1);
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), 0);
    CHECK(eq(c.access_key, "K2") && eq(c.secret_key, "S2") &&
          eq(c.session_token, "T2"));
    CHECK(eq(c.region, "eu-west-3"));
    CHECK(eq(c.endpoint, "http://127.0.0.1:4568"));
    tdb_s3_config_free(&c);

    /* the environment wins over the files */
    setenv("AWS_ACCESS_KEY_ID", "K3", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "S3", 1);
    setenv("AWS_DEFAULT_REGION", "us-west-1", 1);
    setenv("AWS_ENDPOINT_URL", "http://a.invalid", 1);
    setenv("AWS_ENDPOINT_URL_S3", "http://b.invalid", 1);
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), 0);
    CHECK(eq(c.access_key, "K3") && eq(c.secret_key, "S3"));
    CHECK(c.session_token == NULL);   /* not the profile's token */
    CHECK(eq(c.region, "us-west-1"));
    CHECK(eq(c.endpoint, "http://b.invalid"));
    tdb_s3_config_free(&c);
    setenv("AWS_REGION", "us-west-2", 1);
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), 0);
    CHECK(eq(c.region, "us-west-2"));
    tdb_s3_config_free(&c);

    /* no files, no variables: anonymous, default region */
    clear_env();
    setenv("HOME", "/nonexistent-tiledbfs", 1);
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), 0);
    CHECK(c.access_key == NULL && c.secret_key == NULL && c.region == NULL);
    tdb_s3_config_free(&c);

    unlink(cred);
    unlink(conf);
    rmdir(aws);
    rmdir(home);
}

/* URLs and endpoints that cannot be used are refused at once. */
static void test_open_errors(void)
{
    struct tdb_s3_config c = {0};
    struct tdb_io io = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_s3(&io, "/tmp/array", &c, &err), TDB_E_INVAL);
    CHECK_EQ_INT(tdb_io_s3(&io, "s3:///array", &c, &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, "no bucket") != NULL);
    c.endpoint = "ftp://127.0.0.1:21";
    CHECK_EQ_INT(tdb_io_s3(&io, "s3://b/array", &c, &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, "ftp://127.0.0.1:21") != NULL);
    c.endpoint = NULL;
    c.access_key = "K";
    CHECK_EQ_INT(tdb_io_s3(&io, "s3://b/array", &c, &err), TDB_E_INVAL);
    c.secret_key = "S";
    CHECK_EQ_INT(tdb_io_s3(&io, "s3://b/array", &c, &err), 0);
    tdb_io_free(&io);
    CHECK(tdb_io_is_url("s3://b/a") && !tdb_io_is_url("/s3://b"));
}

/* Nothing listens on the port: the open names the URL and the failure. */
static void test_unreachable(void)
{
    clear_env();
    setenv("HOME", "/nonexistent-tiledbfs", 1);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1", 1);
    struct tdb_io io = {0};
    struct tdb_error err = {0};
    int r = tdb_io_open_url(&io, "s3://bucket/array", &err);
    CHECK_EQ_INT(r, TDB_E_IO);
    CHECK(strstr(err.msg, "s3://bucket/array/") != NULL);
    CHECK(strstr(err.msg, "connect") != NULL || strstr(err.msg, "Connect"));
    CHECK(io.ops == NULL);
    clear_env();
}

int main(void)
{
    tdb_s3_global_init();
    RUN(test_sigv4_get_range);
    RUN(test_sigv4_put);
    RUN(test_sigv4_query);
    RUN(test_encode);
    RUN(test_ini);
    RUN(test_config);
    RUN(test_open_errors);
    RUN(test_unreachable);
    return unit_done();
}
