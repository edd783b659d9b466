/* test_options.c: the typed options of a mount (mount/options.c): each
 * option parsed and checked with its reason, key files, sizes, uid=, gid=
 * and umask=, and the S3 options handed to the engine. */
#include "fixture.h"
#include "core/core.h"
#include "core/io_local.h"
#include "../support.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Writes n bytes of p into file `path`, replacing it. */
static void put_file(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK_EQ_INT(write(fd, p, n), (long long)n);
    close(fd);
}

/* The message of key_file= for a file holding `text`. */
static const char *key_file_why(const char *path, const char *text,
                                char *why, size_t cap)
{
    struct tdbm_options o;

    tdbm_options_init(&o);
    put_file(path, text, strlen(text));
    CHECK_EQ_INT(tdbm_option(&o, "key_file", path, why, cap), -1);
    CHECK(o.open.key == NULL);
    tdbm_options_free(&o);
    return why;
}

/* A key file that is not 32 bytes says what it probably holds instead:
 * 32 bytes and a newline, or the key in hex (with or without one). */
static void key_file_hints(const char *path)
{
    static const char hex[] = "00112233445566778899aabbccddeeff"
                              "00112233445566778899AABBCCDDEEFF";
    char why[1400], text[80];

    key_file_why(path, "0123456789abcdef0123456789ABCDEF\n", why,
                 sizeof why);
    CHECK(strstr(why, "holds 33 bytes; an AES-256-GCM key is exactly 32: "
                 "a trailing newline? write it with printf or head -c 32"));
    key_file_why(path, hex, why, sizeof why);
    CHECK(strstr(why, "holds 64 bytes") && strstr(why, "the key in hex?"));
    snprintf(text, sizeof text, "%s\n", hex);
    key_file_why(path, text, why, sizeof why);
    CHECK(strstr(why, "holds 65 bytes") && strstr(why, "the key in hex?"));
    text[5] = 'x';  /* not hex: no advice */
    key_file_why(path, text, why, sizeof why);
    CHECK(strstr(why, "holds 65 bytes; an AES-256-GCM key is exactly 32") &&
          !strstr(why, "hex"));
    snprintf(text, sizeof text, "%s\n\n", hex);
    key_file_why(path, text, why, sizeof why);
    CHECK(strstr(why, "holds more than 65 bytes") && !strstr(why, "hex"));
    key_file_why(path, "short\n", why, sizeof why);
    CHECK(strstr(why, "holds 6 bytes; an AES-256-GCM key is exactly 32") &&
          !strstr(why, "newline"));
}

/* A list of options parsed, the check refusing -o rw with timestamp=, and
 * accepted values of single options. */
static void options_accepted(struct tdbm_options *o, char *why, size_t cap)
{
    CHECK_EQ_INT(tdbm_option_list(o, "timestamp=5,cache_size=2M,threads=4,rw",
                                  why, cap), 0);
    CHECK(o->open.ts_start == 0 && o->open.ts_end == 5 && o->timestamp_set);
    CHECK(o->open.cache_bytes == 2u << 20 && o->open.threads == 4 && o->rw);
    CHECK_EQ_INT(tdbm_options_check(o, why, cap), -1);
    CHECK(strcmp(why, "-o rw and timestamp= do not go together (a write is "
                 "made now, outside the opened range)") == 0);
    CHECK_EQ_INT(tdbm_option(o, "timestamp", "3:9", why, cap), 0);
    CHECK(o->open.ts_start == 3 && o->open.ts_end == 9);
    CHECK_EQ_INT(tdbm_option(o, "cache_size", "7k", why, cap), 0);
    CHECK(o->open.cache_bytes == 7 << 10);
    CHECK_EQ_INT(tdbm_option(o, "cache_size", "1G", why, cap), 0);
    CHECK(o->open.cache_bytes == 1u << 30);
    CHECK_EQ_INT(tdbm_option(o, "nope", "1", why, cap), 1);
}

/* Refused values, each with its reason (NULL: not looked at); the
 * options keep the values they had. */
static void options_refused(struct tdbm_options *o, char *why, size_t cap)
{
    static const struct {
        const char *name, *value, *why;
    } bad[] = {
        {"timestamp", "9:3", "timestamp=9:3: want T or T1:T2 with T1 <= T2"},
        {"timestamp", "x", "timestamp=x: not a number"},
        {"cache_size", "5T", "cache_size=5T: not a size"},
        {"cache_size", "18446744073709551615G", NULL},
        /* 0 is no size: the engine would take it for its default */
        {"cache_size", "0", "cache_size=0: not a size above 0 (leave the "
                            "option out for its default)"},
        {"disk_cache_size", "0M", NULL},
        {"threads", "257", "threads=257: not a number of threads (0 to 256)"},
        {"rw", "1", "option rw takes no value"},
        {"timestamp", NULL, "option timestamp needs a value (timestamp=...)"},
        {"group_members", "all", "group_members=all: not inside or any"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_EQ_INT(tdbm_option(o, bad[i].name, bad[i].value, why, cap), -1);
        if (bad[i].why && strcmp(why, bad[i].why) != 0) {
            fprintf(stderr, "FAIL %s: %s=%s said '%s', not '%s'\n", unit_cur,
                    bad[i].name, bad[i].value ? bad[i].value : "(none)", why,
                    bad[i].why);
            unit_cur_failed = 1;
        }
    }
    CHECK(o->open.ts_start == 3 && o->open.ts_end == 9); /* unchanged */
    CHECK(o->open.cache_bytes == 1u << 30 && o->s3.disk_cache_bytes == 0);
}

/* An unknown option's message names every option of the table;
 * group_members= takes any and inside. */
static void options_unknown_and_members(struct tdbm_options *o, char *why,
                                        size_t cap)
{
    CHECK_EQ_INT(tdbm_option_list(o, "rw,bogus=1", why, cap), -1);
    CHECK(strncmp(why, "unknown option bogus (known: timestamp, ", 40) == 0);
    for (const struct tdbm_option *t = tdbm_option_table; t->name; t++) {
        char name[64];
        snprintf(name, sizeof name, " %s%s", t->name, t[1].name ? "," : ")");
        CHECK(strstr(why, name) != NULL);
    }
    CHECK_EQ_INT(tdbm_option(o, "group_members", "any", why, cap), 0);
    CHECK_EQ_INT(o->open.members, TDB_MEMBERS_ANY);
    CHECK_EQ_INT(tdbm_option(o, "group_members", "inside", why, cap), 0);
    CHECK_EQ_INT(o->open.members, TDB_MEMBERS_INSIDE);
    /* staging_dir is made absolute */
    CHECK_EQ_INT(tdbm_option(o, "staging_dir", "rel/dir", why, cap), 0);
    char *cwd = getcwd(NULL, 0), want[4200];
    snprintf(want, sizeof want, "%s/rel/dir", cwd);
    CHECK(o->staging_dir && strcmp(o->staging_dir, want) == 0);
    free(cwd);
}

/* key_file: exactly 32 bytes; shorter, longer and missing files refused
 * with their reason. */
static void options_key_file(struct tdbm_options *o, char *why, size_t cap)
{
    char path[64], opt[128], want[200];
    uint8_t key[33];
    strcpy(path, "/tmp/test_mount_key.XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    for (int i = 0; i < 33; i++)
        key[i] = (uint8_t)(i * 5 + 1);
    CHECK_EQ_INT(write(fd, key, 31), 31);
    snprintf(opt, sizeof opt, "key_file=%s", path);
    CHECK_EQ_INT(tdbm_option_list(o, opt, why, cap), -1);
    snprintf(want, sizeof want, "key_file: %s: holds 31 bytes; an "
             "AES-256-GCM key is exactly 32", path);
    CHECK(strcmp(why, want) == 0);
    CHECK(o->open.key == NULL);
    CHECK_EQ_INT(write(fd, key + 31, 1), 1);
    CHECK_EQ_INT(tdbm_option_list(o, opt, why, cap), 0);
    CHECK(o->open.key == o->key);
    CHECK_MEM(o->key, key, 32);
    CHECK_EQ_INT(write(fd, key + 32, 1), 1);
    CHECK_EQ_INT(tdbm_option(o, "key_file", path, why, cap), -1);
    CHECK(strstr(why, "holds 33 bytes; an AES-256-GCM key is exactly 32") &&
          !strstr(why, "newline"));
    close(fd);
    key_file_hints(path);
    unlink(path);
    CHECK_EQ_INT(tdbm_option(o, "key_file", path, why, cap), -1);
    CHECK(strstr(why, "No such file or directory") != NULL);
}

/* The one number parser: sizes, counts, the daemon's readahead=. */
static void options_numbers(void)
{
    static const struct {
        const char *text;
        bool size;
        uint64_t max, want;     /* want UINT64_MAX: refused */
    } num[] = {
        {"3M", true, UINT64_MAX, 3u << 20},
        {"3M", false, UINT64_MAX, UINT64_MAX},
        {"256", false, 256, 256},
        {"257", false, 256, UINT64_MAX},
        {"2k", true, 2047, UINT64_MAX},
        {"", false, 10, UINT64_MAX},
        {"-0", false, 10, UINT64_MAX},
        {" 1", false, 10, UINT64_MAX},
        {"99999999999999999999", false, UINT64_MAX, UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof num / sizeof *num; i++) {
        uint64_t v = 9;
        int rc = tdbm_parse_number(num[i].text, num[i].size, num[i].max, &v);
        if (num[i].want == UINT64_MAX)
            CHECK_EQ_INT(rc, -1);
        else
            CHECK(rc == 0 && v == num[i].want);
    }
    unsigned long kib = 9;
    CHECK(tdbm_parse_kib("1048576", 1ul << 20, &kib) == 0 && kib == 1ul << 20);
    CHECK_EQ_INT(tdbm_parse_kib("1048577", 1ul << 20, &kib), -1);
    CHECK_EQ_INT(tdbm_parse_kib("1K", 1ul << 20, &kib), -1);
}

static void test_options(void)
{
    struct tdbm_options o;
    char why[1400];

    tdbm_options_init(&o);
    options_accepted(&o, why, sizeof why);
    options_refused(&o, why, sizeof why);
    options_unknown_and_members(&o, why, sizeof why);
    options_key_file(&o, why, sizeof why);
    /* every option of the table is parsed by tdbm_option */
    for (const struct tdbm_option *t = tdbm_option_table; t->name; t++)
        CHECK(tdbm_option(&o, t->name, "", why, sizeof why) == -1);
    tdbm_options_free(&o);
    CHECK(o.open.key == NULL && o.staging_dir == NULL);
    options_numbers();
}

/* uid=, gid= and umask=: parsed, checked, and their defaults. */
static void test_owner_options(void)
{
    struct tdbm_options o;
    char why[400];

    tdbm_options_init(&o);
    CHECK(o.uid == -1 && o.gid == -1 && o.umask == 022);
    CHECK_EQ_INT(tdbm_option_list(&o, "uid=1000,gid=0,umask=0027", why,
                                  sizeof why), 0);
    CHECK(o.uid == 1000 && o.gid == 0 && o.umask == 027);
    CHECK_EQ_INT(tdbm_option(&o, "uid", "4294967294", why, sizeof why), 0);
    CHECK(o.uid == 4294967294LL);
    CHECK_EQ_INT(tdbm_option(&o, "umask", "7", why, sizeof why), 0);
    CHECK(o.umask == 07);
    CHECK_EQ_INT(tdbm_option(&o, "uid", "4294967295", why, sizeof why), -1);
    CHECK(strcmp(why, "uid=4294967295: not a number (0 to 4294967294)") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "gid", "-1", why, sizeof why), -1);
    CHECK(strcmp(why, "gid=-1: not a number (0 to 4294967294)") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "uid", "alice", why, sizeof why), -1);
    CHECK_EQ_INT(tdbm_option(&o, "umask", "8", why, sizeof why), -1);
    CHECK(strcmp(why, "umask=8: not octal mode bits (0 to 777)") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "umask", "1000", why, sizeof why), -1);
    CHECK_EQ_INT(tdbm_option(&o, "umask", "", why, sizeof why), -1);
    CHECK(o.uid == 4294967294LL && o.gid == 0 && o.umask == 07);
    tdbm_options_free(&o);
}

/* The S3 options: endpoint, region and profile kept as given, the two
 * files made absolute (the daemon leaves its folder), all handed to the
 * engine by tdbm_s3_options. */
static void test_s3_option_values(void)
{
    struct tdb_store_options s3;
    struct tdbm_options o;
    char why[256], *cwd = getcwd(NULL, 0), want[4200];

    tdbm_options_init(&o);
    CHECK_EQ_INT(tdbm_option_list(&o, "endpoint=http://h:9/x,region=eu-1,"
                                  "profile=p q,credentials_file=k,"
                                  "config_file=/etc/c", why, sizeof why), 0);
    tdbm_s3_options(&o, &s3);
    CHECK(s3.endpoint && strcmp(s3.endpoint, "http://h:9/x") == 0);
    CHECK(s3.region && strcmp(s3.region, "eu-1") == 0);
    CHECK(s3.profile && strcmp(s3.profile, "p q") == 0);
    snprintf(want, sizeof want, "%s/k", cwd);
    CHECK(s3.credentials_file && strcmp(s3.credentials_file, want) == 0);
    CHECK(s3.config_file && strcmp(s3.config_file, "/etc/c") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "endpoint", NULL, why, sizeof why), -1);
    tdbm_options_free(&o);
    CHECK(o.endpoint == NULL && o.credentials_file == NULL);
    free(cwd);
}

int main(void)
{
    RUN(test_options);
    RUN(test_owner_options);
    RUN(test_s3_option_values);
    return unit_done();
}
