/* io_s3_config.c: where and as whom the S3 backend connects, read as the
 * AWS tools read it: the environment, ~/.aws/credentials, ~/.aws/config. */
#include "core/core.h"
#include "core/io_s3.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

/* ---------------------------------------------------------- ini files */

/* [p, e) without leading and trailing blanks. */
static void s3_strip(const char **p, const char **e)
{
    while (*p < *e && isspace((unsigned char)**p))
        (*p)++;
    while (*e > *p && isspace((unsigned char)(*e)[-1]))
        (*e)--;
}

static bool s3_eq(const char *p, const char *e, const char *s)
{
    size_t n = (size_t)(e - p);
    return strlen(s) == n && !strncasecmp(p, s, n);
}

int tdb_s3_ini_get(const char *text, size_t len, const char *section,
                   const char *key, char **value)
{
    const char *p = text, *end = text + len;
    bool in = false;
    *value = NULL;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *ls = p;
        p = nl ? nl + 1 : end;
        bool indented = ls < le && (*ls == ' ' || *ls == '\t');
        s3_strip(&ls, &le);
        if (ls == le || *ls == '#' || *ls == ';')
            continue;
        if (*ls == '[') {
            if (le[-1] != ']' || indented)
                continue;
            const char *a = ls + 1, *b = le - 1;
            s3_strip(&a, &b);
            in = s3_eq(a, b, section);
            continue;
        }
        if (!in || indented)
            continue;
        const char *eq = memchr(ls, '=', (size_t)(le - ls));
        if (!eq)
            continue;
        const char *ka = ls, *kb = eq, *va = eq + 1, *vb = le;
        s3_strip(&ka, &kb);
        s3_strip(&va, &vb);
        if (!s3_eq(ka, kb, key))
            continue;
        free(*value);   /* the last one wins, as in the AWS tools */
        if (!(*value = strndup(va, (size_t)(vb - va))))
            return TDB_E_NOMEM;
    }
    return *value ? 0 : TDB_E_NOENT;
}

/* ------------------------------------------------------- configuration */

static int s3_dupenv(char **dst, const char *name)
{
    const char *v = getenv(name);
    if (!v || !v[0] || *dst)
        return 0;
    return (*dst = strdup(v)) ? 0 : TDB_E_NOMEM;
}

/* Reads a small text file (an ini file of ~/.aws); NULL when missing. */
static char *s3_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    struct tdb_buf b = {0};
    char chunk[4096];
    size_t n;
    int bad = 0;
    while (!bad && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        bad = tdb_buf_append(&b, chunk, n) || b.len > (1u << 20);
    fclose(f);
    if (bad || tdb_buf_append(&b, "", 1)) {
        tdb_buf_free(&b);
        return NULL;
    }
    *len = b.len - 1;
    return (char *)b.data;
}

/* Sets *dst (when still NULL) from `key` of `section` in ini text. */
static int s3_from_ini(char **dst, const char *text, size_t len,
                       const char *section, const char *key)
{
    if (*dst || !text)
        return 0;
    int r = tdb_s3_ini_get(text, len, section, key, dst);
    return r == TDB_E_NOENT ? 0 : r;
}

/* A file named by env `var`, else ~/.aws/NAME. */
static char *s3_aws_file(const char *var, const char *name)
{
    const char *v = getenv(var), *home = getenv("HOME");
    char *p = NULL;
    if (v && v[0])
        return strdup(v);
    if (!home || !home[0] || asprintf(&p, "%s/.aws/%s", home, name) < 0)
        return NULL;
    return p;
}

int tdb_s3_config_load(struct tdb_s3_config *cfg, struct tdb_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    const char *prof = getenv("AWS_PROFILE");
    if (!prof || !prof[0])
        prof = "default";
    char *credpath = s3_aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    char *confpath = s3_aws_file("AWS_CONFIG_FILE", "config");
    char *section = NULL;
    size_t credlen = 0, conflen = 0;
    char *cred = credpath ? s3_slurp(credpath, &credlen) : NULL;
    char *conf = confpath ? s3_slurp(confpath, &conflen) : NULL;
    int r = 0;
    /* ~/.aws/config names its sections "profile NAME", except default */
    if (!strcmp(prof, "default") ? !(section = strdup(prof))
                                 : asprintf(&section, "profile %s", prof) < 0) {
        section = NULL;
        r = TDB_E_NOMEM;
        goto out;
    }
    const char *id = getenv("AWS_ACCESS_KEY_ID");
    if (id && id[0]) {
        if ((r = s3_dupenv(&cfg->access_key, "AWS_ACCESS_KEY_ID")) ||
            (r = s3_dupenv(&cfg->secret_key, "AWS_SECRET_ACCESS_KEY")) ||
            (r = s3_dupenv(&cfg->session_token, "AWS_SESSION_TOKEN")))
            goto out;
    } else {
        static const char *const names[] = {
            "aws_access_key_id", "aws_secret_access_key", "aws_session_token"};
        char **dst[] = {&cfg->access_key, &cfg->secret_key,
                        &cfg->session_token};
        for (int i = 0; i < 3; i++)
            if ((r = s3_from_ini(dst[i], cred, credlen, prof, names[i])) ||
                (r = s3_from_ini(dst[i], conf, conflen, section, names[i])))
                goto out;
    }
    if ((r = s3_dupenv(&cfg->region, "AWS_REGION")) ||
        (r = s3_dupenv(&cfg->region, "AWS_DEFAULT_REGION")) ||
        (r = s3_from_ini(&cfg->region, conf, conflen, section, "region")) ||
        (r = s3_dupenv(&cfg->endpoint, "AWS_ENDPOINT_URL_S3")) ||
        (r = s3_dupenv(&cfg->endpoint, "AWS_ENDPOINT_URL")) ||
        (r = s3_from_ini(&cfg->endpoint, conf, conflen, section,
                         "endpoint_url")))
        goto out;
out:
    if (cred)
        explicit_bzero(cred, credlen);
    free(cred);
    free(conf);
    free(credpath);
    free(confpath);
    free(section);
    if (r) {
        tdb_s3_config_free(cfg);
        return tdb_err(err, r, "AWS configuration: %s", tdb_strerror(r));
    }
    return 0;
}

void tdb_s3_config_free(struct tdb_s3_config *cfg)
{
    if (!cfg)
        return;
    if (cfg->secret_key)
        explicit_bzero(cfg->secret_key, strlen(cfg->secret_key));
    free(cfg->access_key);
    free(cfg->secret_key);
    free(cfg->session_token);
    free(cfg->region);
    free(cfg->endpoint);
    memset(cfg, 0, sizeof *cfg);
}
