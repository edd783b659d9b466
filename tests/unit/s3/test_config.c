/* test_config.c: where and as whom the S3 backend works (format/s3/
 * config.c): the ini files of ~/.aws and the configuration read from the
 * environment. */
#include "../support.h"

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

static bool eq(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

/* Credentials from the environment first, else the profile's files;
 * region and endpoint from the environment, else ~/.aws/config. */
/* From ~/.aws: the default profile, then AWS_PROFILE=dev. */
static void check_config_files(void)
{
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
}

/* The environment wins over the files; AWS_REGION over
 * AWS_DEFAULT_REGION. */
static void check_config_env(void)
{
    struct tdb_s3_config c;
    struct tdb_error err = {0};
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
}

/* No files, no variables: anonymous, default region. */
static void check_config_none(void)
{
    struct tdb_s3_config c;
    struct tdb_error err = {0};
    unit_aws_env_clear();
    setenv("HOME", "/nonexistent-tiledbfs", 1);
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), 0);
    CHECK(c.access_key == NULL && c.secret_key == NULL && c.region == NULL);
    CHECK(c.creds == NULL);
    tdb_s3_config_free(&c);
}

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
    unit_aws_env_clear();
    setenv("HOME", home, 1);
    check_config_files();
    check_config_env();
    check_config_none();
    unlink(cred);
    unlink(conf);
    rmdir(aws);
    rmdir(home);
}

int main(void)
{
    tdb_s3_global_init();
    RUN(test_ini);
    RUN(test_config);
    return unit_done();
}
