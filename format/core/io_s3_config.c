/* io_s3_config.c: where and as whom the S3 backend connects, read as the
 * AWS tools read it: the environment, ~/.aws/credentials, ~/.aws/config. */
#include "core/core.h"
#include "core/io_s3.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

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
            if (in && !key)
                return 0;   /* the section is there */
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

#define S3_INI_MAX (1u << 20) /* bytes of an ini file at most */

/* Reads a small text file (an ini file of ~/.aws).  @return its text, or
 * NULL with *why, a short reason (a folder, no regular file, too large,
 * strerror's). */
static char *s3_slurp(const char *path, size_t *len, const char **why)
{
    struct tdb_buf b = {0};
    char chunk[4096];
    struct stat st;
    ssize_t n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

    if (fd < 0 || fstat(fd, &st) < 0) {
        *why = strerror(errno);
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        *why = S_ISDIR(st.st_mode) ? "it is a folder, not a file"
                                   : "it is not a regular file";
        goto fail;
    }
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *why = strerror(errno);
            goto fail;
        }
        if (tdb_buf_append(&b, chunk, (size_t)n)) {
            *why = strerror(ENOMEM);
            goto fail;
        }
        if (b.len > S3_INI_MAX) {
            *why = "it is larger than 1 MiB";
            goto fail;
        }
    }
    if (tdb_buf_append(&b, "", 1)) {
        *why = strerror(ENOMEM);
        goto fail;
    }
    close(fd);
    *len = b.len - 1;
    return (char *)b.data;
fail:
    if (fd >= 0)
        close(fd);
    if (b.data)
        explicit_bzero(b.data, b.len);
    tdb_buf_free(&b);
    return NULL;
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

/* A copy of `v` into *dst when given and *dst is still unset. */
static int s3_set(char **dst, const char *v)
{
    if (!v || *dst)
        return 0;
    return (*dst = strdup(v)) ? 0 : TDB_E_NOMEM;
}

/* The ini files of the configuration and the profile's sections in
 * them. */
struct s3_files {
    const char *prof;       /* the profile: its section in credentials */
    char *section;          /* its section in config ("profile NAME") */
    char *credpath, *confpath;
    char *cred, *conf;      /* their text; NULL when missing */
    size_t credlen, conflen;
};

static void s3_files_free(struct s3_files *f)
{
    if (f->cred)
        explicit_bzero(f->cred, f->credlen);
    free(f->cred);
    free(f->conf);
    free(f->credpath);
    free(f->confpath);
    free(f->section);
}

/* Reads the files: those the options name (which must exist), else as
 * the AWS tools find them (missing ones are fine). */
static int s3_files_read(struct s3_files *f, const struct tdb_s3_options *o,
                         struct tdb_error *err)
{
    memset(f, 0, sizeof *f);
    f->prof = o->profile ? o->profile : getenv("AWS_PROFILE");
    if (!f->prof || !f->prof[0])
        f->prof = "default";
    f->credpath = o->credentials_file
                      ? strdup(o->credentials_file)
                      : s3_aws_file("AWS_SHARED_CREDENTIALS_FILE",
                                    "credentials");
    f->confpath = o->config_file ? strdup(o->config_file)
                                 : s3_aws_file("AWS_CONFIG_FILE", "config");
    /* ~/.aws/config names its sections "profile NAME", except default */
    if (!strcmp(f->prof, "default")
            ? !(f->section = strdup(f->prof))
            : asprintf(&f->section, "profile %s", f->prof) < 0) {
        f->section = NULL;
        return tdb_err(err, TDB_E_NOMEM, "AWS configuration: out of memory");
    }
    const char *cwhy = NULL, *fwhy = NULL;
    f->cred = f->credpath ? s3_slurp(f->credpath, &f->credlen, &cwhy)
                          : NULL;
    f->conf = f->confpath ? s3_slurp(f->confpath, &f->conflen, &fwhy)
                          : NULL;
    /* a file the options name must be read; one found as the AWS tools
     * find them may be missing */
    if (o->credentials_file && !f->cred)
        return tdb_err(err, TDB_E_INVAL, "credentials_file=%s: cannot read "
                       "it: %s", o->credentials_file, cwhy);
    if (o->config_file && !f->conf)
        return tdb_err(err, TDB_E_INVAL, "config_file=%s: cannot read it: "
                       "%s", o->config_file, fwhy);
    return 0;
}

/* Whether ini text has section `name`. */
static bool s3_has_section(const char *text, size_t len, const char *name)
{
    char *v = NULL;
    return text && tdb_s3_ini_get(text, len, name, NULL, &v) == 0;
}

/* The keys: from the environment (AWS_ACCESS_KEY_ID), unless the options
 * name a profile or a credentials file; else from the files. */
static int s3_keys(struct tdb_s3_config *cfg, const struct s3_files *f,
                   const struct tdb_s3_options *o, struct tdb_error *err)
{
    static const char *const names[] = {
        "aws_access_key_id", "aws_secret_access_key", "aws_session_token"};
    char **dst[] = {&cfg->access_key, &cfg->secret_key, &cfg->session_token};
    const char *id = getenv("AWS_ACCESS_KEY_ID");
    int r = 0;

    if (id && id[0] && !o->profile && !o->credentials_file) {
        if ((r = s3_dupenv(&cfg->access_key, "AWS_ACCESS_KEY_ID")) ||
            (r = s3_dupenv(&cfg->secret_key, "AWS_SECRET_ACCESS_KEY")) ||
            (r = s3_dupenv(&cfg->session_token, "AWS_SESSION_TOKEN")))
            return tdb_err(err, r, "AWS configuration: %s", tdb_strerror(r));
        return 0;
    }
    /* a profile or file the options name must hold the profile */
    if ((o->profile || o->credentials_file) &&
        !s3_has_section(f->cred, f->credlen, f->prof) &&
        !s3_has_section(f->conf, f->conflen, f->section))
        return tdb_err(err, TDB_E_INVAL, "profile %s: in neither %s nor %s",
                       f->prof,
                       f->credpath ? f->credpath : "(no credentials file)",
                       f->confpath ? f->confpath : "(no config file)");
    for (int i = 0; !r && i < 3; i++)
        if (!(r = s3_from_ini(dst[i], f->cred, f->credlen, f->prof,
                              names[i])))
            r = s3_from_ini(dst[i], f->conf, f->conflen, f->section,
                            names[i]);
    return r ? tdb_err(err, r, "AWS configuration: %s", tdb_strerror(r)) : 0;
}

int tdb_s3_config_load_with(struct tdb_s3_config *cfg,
                            const struct tdb_s3_options *o,
                            struct tdb_error *err)
{
    static const struct tdb_s3_options none;
    struct s3_files f;
    int r;

    memset(cfg, 0, sizeof *cfg);
    if (!o)
        o = &none;
    r = s3_files_read(&f, o, err);
    if (!r)
        r = s3_keys(cfg, &f, o, err);
    if (!r &&
        ((r = s3_set(&cfg->region, o->region)) ||
         (r = s3_dupenv(&cfg->region, "AWS_REGION")) ||
         (r = s3_dupenv(&cfg->region, "AWS_DEFAULT_REGION")) ||
         (r = s3_from_ini(&cfg->region, f.conf, f.conflen, f.section,
                          "region")) ||
         (r = s3_set(&cfg->endpoint, o->endpoint)) ||
         (r = s3_dupenv(&cfg->endpoint, "AWS_ENDPOINT_URL_S3")) ||
         (r = s3_dupenv(&cfg->endpoint, "AWS_ENDPOINT_URL")) ||
         (r = s3_from_ini(&cfg->endpoint, f.conf, f.conflen, f.section,
                          "endpoint_url"))))
        r = tdb_err(err, r, "AWS configuration: %s", tdb_strerror(r));
    s3_files_free(&f);
    if (r)
        tdb_s3_config_free(cfg);
    return r;
}

int tdb_s3_config_load(struct tdb_s3_config *cfg, struct tdb_error *err)
{
    return tdb_s3_config_load_with(cfg, NULL, err);
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
