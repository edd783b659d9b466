/* test_creds.c: the S3 backend's credentials (s3/creds.c,
 * s3/config.c): Signature Version 4 of another service (AWS's IAM
 * example), the parsers of the answers (ISO 8601 times, the JSON of
 * credential_process, of the container endpoint and of IMDS, STS's XML),
 * the renewal rule, the profile settings of the chain and their errors,
 * and renewal itself with a credential_process whose credentials last 3
 * s: renewed by the thread of their own, and once more after an
 * ExpiredToken answer.  The network sources are tested end to end in
 * tests/py/test_s3_creds.py. */
#include "../unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "s3/s3.h"
#include "objstore/objstore.h"

/* ---------------------------------------------------------- signing */

/* AWS's Signature Version 4 example ("Create a signed AWS API request"):
 * IAM ListUsers, 20150830T123600Z, us-east-1, service iam. */
static void test_sigv4_other_service(void)
{
    struct tdb_store_pair h[] = {
        {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"},
        {"Host", "iam.amazonaws.com"},
        {"X-Amz-Date", "20150830T123600Z"},
    };
    struct tdb_s3_request rq = {
        .method = "GET", .path = "/",
        .query = "Action=ListUsers&Version=2010-05-08", .hdr = h, .nhdr = 3,
        .payload_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca4"
                        "95991b7852b855",
        .amz_date = "20150830T123600Z"};
    struct tdb_s3_signer by = {
        .region = "us-east-1", .key_id = "AKIDEXAMPLE",
        .secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"};
    char auth[512];
    CHECK_EQ_INT(tdb_s3_sigv4_for(auth, sizeof auth, &rq, &by, "iam"), 0);
    CHECK(!strcmp(auth,
                  "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/"
                  "iam/aws4_request, SignedHeaders=content-type;host;"
                  "x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789"
                  "a8edb4c82c400e06b5924a6f2b5d7"));
    /* the same request for s3 is another signature */
    CHECK_EQ_INT(tdb_s3_sigv4(auth, sizeof auth, &rq, &by), 0);
    CHECK(strstr(auth, "/s3/aws4_request") && !strstr(auth, "5d672d79"));
}

/* ---------------------------------------------------------- parsers */

static void test_time_parse(void)
{
    int64_t ms = 0;
    CHECK_EQ_INT(tdb_s3_time_parse("1970-01-01T00:00:00Z", &ms), 0);
    CHECK_EQ_INT(ms, 0);
    CHECK_EQ_INT(tdb_s3_time_parse("2019-11-09T13:34:41Z", &ms), 0);
    CHECK_EQ_INT(ms, INT64_C(1573306481000));
    CHECK_EQ_INT(tdb_s3_time_parse("2019-11-09T13:34:41.359Z", &ms), 0);
    CHECK_EQ_INT(ms, INT64_C(1573306481359));
    CHECK_EQ_INT(tdb_s3_time_parse("2019-11-09T15:34:41+02:00", &ms), 0);
    CHECK_EQ_INT(ms, INT64_C(1573306481000));
    CHECK_EQ_INT(tdb_s3_time_parse("2019-11-09T13:34:41.5-01:30", &ms), 0);
    CHECK_EQ_INT(ms, INT64_C(1573306481500) + 5400 * 1000);
    static const char *const bad[] = {
        "", "2019-11-09", "2019-11-09T13:34:41", "2019-11-09T13:34:41Q",
        "2019-13-09T13:34:41Z", "2019-11-09T25:34:41Z", "2019-11-09T13:34:41Zx",
        "2019-11-09T13:34:41.Z", "2019-11-09 13:34:41Z", "20191109T133441Z"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_EQ_INT(tdb_s3_time_parse(bad[i], &ms), TDB_E_CORRUPT);
}

static int json(const char *text, bool process, struct tdb_s3_keys **k,
                char *why)
{
    return tdb_s3_creds_json(text, strlen(text), process, k, why);
}

static void test_json_answers(void)
{
    struct tdb_s3_keys *k = NULL;
    char why[512];
    /* credential_process's contract */
    CHECK_EQ_INT(json("{\"Version\": 1, \"AccessKeyId\": \"ASIA1\", "
                      "\"SecretAccessKey\": \"s e c\", \"SessionToken\": "
                      "\"T1\", \"Expiration\": \"2030-01-01T00:00:00Z\"}",
                      true, &k, why), 0);
    CHECK(k && !strcmp(k->id, "ASIA1") && !strcmp(k->secret, "s e c") &&
          !strcmp(k->token, "T1") && k->expires == INT64_C(1893456000000));
    tdb_s3_keys_free(k);
    /* long-term keys: no token, no expiry */
    CHECK_EQ_INT(json("{\"Version\": 1, \"AccessKeyId\": \"AKIA\", "
                      "\"SecretAccessKey\": \"S\"}", true, &k, why), 0);
    CHECK(k && !k->token && k->expires == 0);
    tdb_s3_keys_free(k);
    CHECK_EQ_INT(json("{\"Version\": 2, \"AccessKeyId\": \"A\", "
                      "\"SecretAccessKey\": \"SECRET\"}", true, &k, why),
                 TDB_E_CORRUPT);
    CHECK(strstr(why, "Version") && !strstr(why, "SECRET") && !k);
    CHECK_EQ_INT(json("{\"Version\": 1, \"SecretAccessKey\": \"S\"}", true,
                      &k, why), TDB_E_CORRUPT);
    CHECK(strstr(why, "AccessKeyId") != NULL);
    CHECK_EQ_INT(json("{\"Version\": 1, \"AccessKeyId\": \"A\\r\\nX: y\", "
                      "\"SecretAccessKey\": \"S\"}", true, &k, why),
                 TDB_E_CORRUPT);
    CHECK_EQ_INT(json("{\"Version\": 1, \"AccessKeyId\": \"A\", "
                      "\"SecretAccessKey\": \"S\", \"Expiration\": "
                      "\"tomorrow\"}", true, &k, why), TDB_E_CORRUPT);
    CHECK_EQ_INT(json("not json", true, &k, why), TDB_E_CORRUPT);
    /* the container's and IMDS's: Token, and an Expiration required */
    CHECK_EQ_INT(json("{\"Code\": \"Success\", \"Type\": \"AWS-HMAC\", "
                      "\"AccessKeyId\": \"ASIA2\", \"SecretAccessKey\": "
                      "\"S2\", \"Token\": \"T2\", \"Expiration\": "
                      "\"2030-01-01T00:00:00Z\"}", false, &k, why), 0);
    CHECK(k && !strcmp(k->token, "T2"));
    tdb_s3_keys_free(k);
    CHECK_EQ_INT(json("{\"AccessKeyId\": \"A\", \"SecretAccessKey\": \"S\", "
                      "\"Token\": \"T\"}", false, &k, why), TDB_E_CORRUPT);
    CHECK(strstr(why, "Expiration") != NULL);
    CHECK_EQ_INT(json("{\"Code\": \"AssumeRoleUnauthorizedAccess\"}", false,
                      &k, why), TDB_E_CORRUPT);
    CHECK(strstr(why, "AssumeRoleUnauthorizedAccess") != NULL);
    CHECK_EQ_INT(json("{\"code\": \"AccessDeniedException\", \"message\": "
                      "\"bad token\"}", false, &k, why), TDB_E_CORRUPT);
    CHECK(strstr(why, "AccessDeniedException: bad token") != NULL);
}

static void test_sts_answers(void)
{
    static const char ok[] =
        "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/"
        "2011-06-15/\"><AssumeRoleResult><AssumedRoleUser><Arn>arn:aws:sts::"
        "123456789012:assumed-role/demo/Bob</Arn><AssumedRoleId>ARO123EXAMPLE"
        "123:Bob</AssumedRoleId></AssumedRoleUser><Credentials><AccessKeyId>"
        "ASIAIOSFODNN7EXAMPLE</AccessKeyId><SecretAccessKey>wJalrXUtnFEMI/"
        "K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey><SessionToken>AQoDYXdz"
        "EPT//////////wEXAMPLE</SessionToken><Expiration>2019-11-09T13:34:41Z"
        "</Expiration></Credentials><PackedPolicySize>6</PackedPolicySize>"
        "</AssumeRoleResult><ResponseMetadata><RequestId>c6104cbe-af31-11e0-"
        "8154-cbc7ccf896c7</RequestId></ResponseMetadata>"
        "</AssumeRoleResponse>";
    struct tdb_s3_keys *k = NULL;
    char why[512];
    CHECK_EQ_INT(tdb_s3_creds_sts(ok, strlen(ok), &k, why), 0);
    CHECK(k && !strcmp(k->id, "ASIAIOSFODNN7EXAMPLE") &&
          !strcmp(k->secret, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY") &&
          !strcmp(k->token, "AQoDYXdzEPT//////////wEXAMPLE") &&
          k->expires == INT64_C(1573306481000));
    tdb_s3_keys_free(k);
    static const char err[] =
        "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
        "<Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User is "
        "not authorized to perform: sts:AssumeRole</Message></Error>"
        "<RequestId>1</RequestId></ErrorResponse>";
    CHECK_EQ_INT(tdb_s3_creds_sts(err, strlen(err), &k, why), TDB_E_ACCES);
    CHECK(!k && !strcmp(why, "AccessDenied: User is not authorized to "
                             "perform: sts:AssumeRole"));
    CHECK_EQ_INT(tdb_s3_creds_sts("<a>", 3, &k, why), TDB_E_CORRUPT);
    static const char notoken[] =
        "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>A"
        "</AccessKeyId><SecretAccessKey>S</SecretAccessKey><Expiration>"
        "2019-11-09T13:34:41Z</Expiration></Credentials></AssumeRoleResult>"
        "</AssumeRoleResponse>";
    CHECK_EQ_INT(tdb_s3_creds_sts(notoken, strlen(notoken), &k, why),
                 TDB_E_CORRUPT);
    CHECK(strstr(why, "SessionToken") != NULL);
}

/* Less than a third of the lifetime, and at most 5 minutes, left. */
static void test_renew_rule(void)
{
    CHECK_EQ_INT(tdb_s3_renew_at(0, 3600000), 3300000);
    CHECK_EQ_INT(tdb_s3_renew_at(1000, 7000), 5000);
    CHECK_EQ_INT(tdb_s3_renew_at(1000, 1000), 1000);
    CHECK_EQ_INT(tdb_s3_renew_at(5000, 0), INT64_MAX);
}

/* ------------------------------------------------------------- chain */

static char g_home[64];

static void put_file(const char *dir, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* HOME an empty folder with ~/.aws/config `config`; no AWS_* variable
 * but the region (and never the instance metadata). */
static void setup(const char *config)
{
    static const char *const vars[] = {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
        "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
        "AWS_ENDPOINT_URL_STS", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    setenv("AWS_REGION", "eu-west-3", 1);
    setenv("HOME", g_home, 1);
    char aws[128];
    snprintf(aws, sizeof aws, "%s/.aws", g_home);
    mkdir(aws, 0700);
    put_file(aws, "config", config);
    put_file(aws, "credentials", "");
}

/* A load that fails with `code` and a message holding `needle`. */
static void load_fails(const char *config, int code, const char *needle)
{
    struct tdb_s3_config c;
    struct tdb_error err = {0};
    setup(config);
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), code);
    CHECK(strstr(err.msg, needle) != NULL);
    if (!strstr(err.msg, needle))
        fprintf(stderr, "  message: %s\n", err.msg);
}

static void test_profile_errors(void)
{
    load_fails("[default]\nrole_arn = arn:aws:iam::1:role/r\n", TDB_E_INVAL,
               "role_arn without source_profile");
    load_fails("[default]\nrole_arn = arn:aws:iam::1:role/r\n"
               "source_profile = nowhere\n", TDB_E_INVAL,
               "source_profile nowhere is in neither file");
    load_fails("[default]\nrole_arn = arn:aws:iam::1:role/r\n"
               "source_profile = a\n[profile a]\nrole_arn = x\n"
               "source_profile = default\n", TDB_E_INVAL,
               "a loop of source_profile");
    load_fails("[default]\nrole_arn = arn:aws:iam::1:role/r\n"
               "source_profile = default\n", TDB_E_INVAL,
               "its source_profile is itself, which has no keys");
    load_fails("[default]\nrole_arn = arn:aws:iam::1:role/r\n"
               "credential_source = Somewhere\n", TDB_E_INVAL,
               "credential_source Somewhere");
    load_fails("[default]\nrole_arn = arn:aws:iam::1:role/r\n"
               "credential_source = Ec2InstanceMetadata\n", TDB_E_INVAL,
               "AWS_EC2_METADATA_DISABLED");
    load_fails("[default]\nrole_arn = r\naws_access_key_id = A\n"
               "aws_secret_access_key = S\nsource_profile = default\n"
               "duration_seconds = 10m\n", TDB_E_INVAL, "duration_seconds 10m");
    load_fails("[default]\ncredential_process = exit 4\n", TDB_E_ACCES,
               "credentials from profile default's credential_process: it "
               "exited with status 4");
    load_fails("[default]\ncredential_process = kill -9 $$\n", TDB_E_IO,
               "killed by signal 9");
    load_fails("[default]\nweb_identity_token_file = /nonexistent-t\n"
               "role_arn = arn:aws:iam::1:role/r\n", TDB_E_IO,
               "cannot read /nonexistent-t");
    /* the web identity of the environment wants its token file too */
    setup("");
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent-w", 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
    struct tdb_s3_config c;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), TDB_E_IO);
    CHECK(strstr(err.msg, "AWS_WEB_IDENTITY_TOKEN_FILE: cannot read "
                          "/nonexistent-w") != NULL);
    /* plain http:// to another machine: refused before any request */
    setup("");
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://192.0.2.1/c", 1);
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, "plain http://") != NULL);
    unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
}

/* Keys that never expire from credential_process are static: no renewal;
 * the profile's static keys come before its credential_process. */
static void test_process_static(void)
{
    struct tdb_s3_config c;
    struct tdb_error err = {0};
    setup("[default]\ncredential_process = echo '{\"Version\": 1, "
          "\"AccessKeyId\": \"AKIAP\", \"SecretAccessKey\": \"SP\"}'\n");
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), 0);
    CHECK(c.creds != NULL && !c.access_key);
    struct tdb_s3_keys *k = tdb_s3_creds_hold(c.creds);
    CHECK(k && !strcmp(k->id, "AKIAP") && !k->token && !k->expires);
    tdb_s3_creds_drop(c.creds, k);
    tdb_s3_config_free(&c);
    setup("[default]\naws_access_key_id = AKIAS\naws_secret_access_key = S\n"
          "credential_process = exit 1\n");
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), 0);
    CHECK(c.access_key && !strcmp(c.access_key, "AKIAS") && !c.creds);
    tdb_s3_config_free(&c);
}

/* A credential_process whose keys last 3 s, a new key id at each run (a
 * counter in a file): ASIA1, ASIA2, ... */
static void renewing_process(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "[default]\ncredential_process = n=$(cat %s/n 2>/dev/null || "
             "echo 0); n=$((n + 1)); echo $n > %s/n; printf '{\"Version\": "
             "1, \"AccessKeyId\": \"ASIA%%s\", \"SecretAccessKey\": \"S\", "
             "\"SessionToken\": \"T%%s\", \"Expiration\": \"%%s\"}' $n $n "
             "$(date -u -d @$(($(date +%%s) + 3)) +%%Y-%%m-%%dT%%H:%%M:%%SZ)\n",
             g_home, g_home);
    char n[128];
    snprintf(n, sizeof n, "%s/n", g_home);
    unlink(n);
    setup(cfg);
}

static bool keys_are(struct tdb_s3_creds *cr, const char *id)
{
    struct tdb_s3_keys *k = tdb_s3_creds_hold(cr);
    bool yes = k && !strcmp(k->id, id);
    tdb_s3_creds_drop(cr, k);
    return yes;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Used keys are renewed by their thread before they expire; without use
 * they are renewed once more, then left. */
static void test_renewal(void)
{
    struct tdb_s3_config c;
    struct tdb_error err = {0};
    renewing_process();
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), 0);
    struct tdb_s3_creds *cr = tdb_s3_creds_ref(c.creds);
    tdb_s3_config_free(&c);
    CHECK(keys_are(cr, "ASIA1"));     /* held: the thread starts */
    struct tdb_s3_keys *k = tdb_s3_creds_hold(cr);
    int64_t exp1 = k->expires, due = tdb_s3_renew_at(k->got, exp1);
    tdb_s3_creds_drop(cr, k);
    /* past the renewal time of ASIA1 and before its expiry: ASIA2 */
    bool renewed = false;
    while ((int64_t)tdb_now_ms() < exp1 && !renewed) {
        renewed = keys_are(cr, "ASIA2");
        sleep_ms(50);
    }
    CHECK(renewed);
    CHECK((int64_t)tdb_now_ms() >= due);
    /* not used now: renewed once more, then no more */
    sleep_ms(7000);
    struct tdb_s3_creds_stats st;
    tdb_s3_creds_stats(cr, &st);
    CHECK_EQ_INT(st.fetches, 3);
    CHECK_EQ_INT(st.failures, 0);
    tdb_s3_creds_unref(cr);
}

/* An ExpiredToken answer to a request signed with the current keys:
 * renewed at once, and the call is tried once more. */
static void test_expired_answer(void)
{
    struct tdb_s3_config c;
    struct tdb_error err = {0};
    renewing_process();
    CHECK_EQ_INT(tdb_s3_config_load(&c, &err), 0);
    struct tdb_s3_creds *cr = c.creds;
    struct tdb_s3_keys *k = tdb_s3_creds_hold(cr);
    static const char body[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>ExpiredToken"
        "</Code><Message>The provided token has expired.</Message></Error>";
    struct tdb_buf mem = {0};
    bool was_renewed = false;
    struct tdb_s3_try call = {.status = 400, .body = &mem, .keys_gen = k->gen,
                              .renewed = &was_renewed};
    tdb_s3_creds_drop(cr, k);
    CHECK_EQ_INT(tdb_buf_append(&mem, body, strlen(body)), 0);
    uint64_t wait = 0;
    CHECK(tdb_s3_creds_retry(cr, &call, tdb_os_clock_ms(), &wait));
    CHECK(was_renewed && wait > 0 && wait <= 5000);
    CHECK(!tdb_s3_creds_retry(cr, &call, tdb_os_clock_ms(), &wait));
    bool renewed = false;
    for (int i = 0; i < 100 && !renewed; i++) {
        renewed = keys_are(cr, "ASIA2");
        sleep_ms(50);
    }
    CHECK(renewed);
    /* another code, or another status, is not a refusal of the keys */
    was_renewed = false;
    mem.len = 0;
    static const char denied[] =
        "<Error><Code>AccessDenied</Code><Message>no</Message></Error>";
    CHECK_EQ_INT(tdb_buf_append(&mem, denied, strlen(denied)), 0);
    CHECK(!tdb_s3_creds_retry(cr, &call, tdb_os_clock_ms(), &wait));
    call.status = 404;
    CHECK(!tdb_s3_creds_retry(cr, &call, tdb_os_clock_ms(), &wait));
    tdb_buf_free(&mem);
    tdb_s3_config_free(&c);
}

int main(void)
{
    tdb_s3_global_init();
    snprintf(g_home, sizeof g_home, "/tmp/tiledbfs-test-creds.XXXXXX");
    if (!mkdtemp(g_home)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_sigv4_other_service);
    RUN(test_time_parse);
    RUN(test_json_answers);
    RUN(test_sts_answers);
    RUN(test_renew_rule);
    RUN(test_profile_errors);
    RUN(test_process_static);
    RUN(test_renewal);
    RUN(test_expired_answer);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_home);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_home);
    return unit_done();
}
