/* config.c: where and as whom the S3 backend connects, read as the
 * AWS tools read it: the environment, ~/.aws/credentials, ~/.aws/config. */
#include "core/core.h"
#include "s3/s3.h"

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
    if (f->conf)
        explicit_bzero(f->conf, f->conflen);
    free(f->cred);
    free(f->conf);
    free(f->credpath);
    free(f->confpath);
    free(f->section);
}

/* Reads the files: those the options name (which must exist), else as
 * the AWS tools find them (missing ones are fine). */
static int s3_files_read(struct s3_files *f, const struct tdb_store_options *o,
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
    f->cred = f->credpath ? tdb_s3_slurp(f->credpath, &f->credlen, &cwhy)
                          : NULL;
    f->conf = f->confpath ? tdb_s3_slurp(f->confpath, &f->conflen, &fwhy)
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

/* ------------------------------------------------- the credential chain */

#define S3_ROLE_DEPTH 8     /* profiles a role's source_profile chain
                             * passes through at most */

/* What the chain reads: the files, the options, the region found. */
struct s3_chain {
    const struct s3_files *f;
    const struct tdb_store_options *o;
    const char *region;
    struct tdb_error *err;
};

/* The section of profile `prof` in the config file. */
static char *s3_conf_section(const char *prof)
{
    char *sec = NULL;
    if (!strcmp(prof, "default"))
        return strdup(prof);
    return asprintf(&sec, "profile %s", prof) < 0 ? NULL : sec;
}

/* Setting `key` of profile `prof`: its section in the credentials file,
 * else in the config file.  @return 0 (*v a new string or NULL) or
 * TDB_E_NOMEM. */
static int s3_prof_get(const struct s3_chain *x, const char *prof,
                       const char *key, char **v)
{
    const struct s3_files *f = x->f;
    char *sec = s3_conf_section(prof);
    *v = NULL;
    if (!sec)
        return TDB_E_NOMEM;
    int r = s3_from_ini(v, f->cred, f->credlen, prof, key);
    if (!r)
        r = s3_from_ini(v, f->conf, f->conflen, sec, key);
    free(sec);
    return r;
}

static bool s3_prof_exists(const struct s3_chain *x, const char *prof)
{
    char *sec = s3_conf_section(prof);
    bool yes = sec && (s3_has_section(x->f->cred, x->f->credlen, prof) ||
                       s3_has_section(x->f->conf, x->f->conflen, sec));
    free(sec);
    return yes;
}

static int s3_nomem(const struct s3_chain *x)
{
    return tdb_err(x->err, TDB_E_NOMEM, "AWS configuration: out of memory");
}

/* A new source of `kind`, named by the format.  NULL: out of memory. */
static struct tdb_s3_source *s3_src(enum tdb_s3_src_kind kind,
                                    const char *fmt, const char *a)
{
    struct tdb_s3_source *src = calloc(1, sizeof *src);
    if (!src)
        return NULL;
    src->kind = kind;
    if (asprintf(&src->what, fmt, a) < 0) {
        free(src);
        return NULL;
    }
    return src;
}

/* Copies of the value of env `name` (NULL when unset or empty). */
static char *s3_env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? strdup(v) : NULL;
}

static bool s3_env_set(const char *name)
{
    const char *v = getenv(name);
    return v && v[0];
}

/* Where STS is: AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL or the profile's
 * endpoint_url (every service's, as in AWS's SDKs), else the regional
 * endpoint of the region (the global one without a region, or with
 * AWS_STS_REGIONAL_ENDPOINTS=legacy); and the region its signatures
 * name. */
static int s3_sts_where(const struct s3_chain *x, struct tdb_s3_source *src)
{
    const struct s3_files *f = x->f;
    const char *legacy = getenv("AWS_STS_REGIONAL_ENDPOINTS");
    int r = s3_dupenv(&src->sts_url, "AWS_ENDPOINT_URL_STS");
    if (!r)
        r = s3_dupenv(&src->sts_url, "AWS_ENDPOINT_URL");
    if (!r)
        r = s3_from_ini(&src->sts_url, f->conf, f->conflen, f->section,
                        "endpoint_url");
    if (r)
        return r;
    bool global = !x->region || (legacy && !strcasecmp(legacy, "legacy"));
    if (!src->sts_url &&
        (global ? !(src->sts_url = strdup("https://sts.amazonaws.com"))
                : asprintf(&src->sts_url, "https://sts.%s.amazonaws.com",
                           x->region) < 0)) {
        src->sts_url = NULL;
        return TDB_E_NOMEM;
    }
    return (src->sts_region = strdup(global && !x->region ? "us-east-1"
                                                          : x->region))
               ? 0 : TDB_E_NOMEM;
}

/* The container endpoint of the environment, or NULL (*r 0: none). */
static struct tdb_s3_source *s3_container(const struct s3_chain *x, int *r)
{
    const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    const char *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    struct tdb_s3_source *src = NULL;
    *r = 0;
    if (!(full && full[0]) && !(rel && rel[0]))
        return NULL;
    if (!(src = s3_src(TDB_S3_SRC_CONTAINER, "the container endpoint %s",
                       full && full[0] ? "AWS_CONTAINER_CREDENTIALS_FULL_URI"
                                       : "AWS_CONTAINER_CREDENTIALS_"
                                         "RELATIVE_URI")))
        goto nomem;
    /* the relative URI is the ECS agent's, at 169.254.170.2 */
    if (full && full[0] ? !(src->url = strdup(full))
                        : asprintf(&src->url, "http://169.254.170.2%s%s",
                                   rel[0] == '/' ? "" : "/", rel) < 0) {
        src->url = NULL;
        goto nomem;
    }
    src->auth_file = s3_env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (!src->auth_file)
        src->auth = s3_env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    src->timeout_ms = 1000;
    return src;
nomem:
    tdb_s3_source_free(src);
    *r = s3_nomem(x);
    return NULL;
}

/* EC2 instance metadata (unless AWS_EC2_METADATA_DISABLED=true), or NULL
 * (*r 0: none). */
static struct tdb_s3_source *s3_imds(const struct s3_chain *x, int *r)
{
    const char *off = getenv("AWS_EC2_METADATA_DISABLED");
    const char *ep = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    const char *mode = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
    const char *tmo = getenv("AWS_METADATA_SERVICE_TIMEOUT");
    *r = 0;
    if (off && !strcasecmp(off, "true"))
        return NULL;
    if (!ep || !ep[0])
        ep = mode && !strcasecmp(mode, "IPv6") ? "http://[fd00:ec2::254]"
                                               : "http://169.254.169.254";
    size_t l = strlen(ep);
    while (l && ep[l - 1] == '/')
        l--;
    struct tdb_s3_source *src =
        s3_src(TDB_S3_SRC_IMDS, "the EC2 instance metadata at %s", ep);
    if (!src || !(src->url = strndup(ep, l))) {
        tdb_s3_source_free(src);
        *r = s3_nomem(x);
        return NULL;
    }
    /* seconds to connect (AWS's SDKs: 1) */
    long t = tmo && tmo[0] ? strtol(tmo, NULL, 10) : 1;
    src->timeout_ms = (unsigned)(t >= 1 && t <= 60 ? t : 1) * 1000;
    return src;
}

/* The static keys of profile prof (any of the three) as a KEYS source,
 * or NULL. */
static int s3_prof_keys(const struct s3_chain *x, const char *prof,
                        struct tdb_s3_source **out)
{
    char *id = NULL, *secret = NULL, *token = NULL;
    *out = NULL;
    int r = s3_prof_get(x, prof, "aws_access_key_id", &id);
    if (!r)
        r = s3_prof_get(x, prof, "aws_secret_access_key", &secret);
    if (!r)
        r = s3_prof_get(x, prof, "aws_session_token", &token);
    if (!r && (id || secret) &&
        !(*out = s3_src(TDB_S3_SRC_KEYS, "profile %s's keys", prof)))
        r = TDB_E_NOMEM;
    if (*out) {
        (*out)->id = id;
        (*out)->secret = secret;
        (*out)->token = token;
        return 0;
    }
    free(id);
    if (secret)
        explicit_bzero(secret, strlen(secret));
    free(secret);
    free(token);
    return r ? s3_nomem(x) : 0;
}

static int s3_profile(const struct s3_chain *x, const char *prof,
                      unsigned depth, struct tdb_s3_source **out);

/* The source whose keys sign a role's AssumeRole: source_profile (itself:
 * its static keys) or credential_source. */
static int s3_role_from(const struct s3_chain *x, const char *prof,
                        unsigned depth, struct tdb_s3_source *role)
{
    char *sp = NULL, *cs = NULL;
    int r = s3_prof_get(x, prof, "source_profile", &sp);
    if (!r)
        r = s3_prof_get(x, prof, "credential_source", &cs);
    if (r) {
        r = s3_nomem(x);
    } else if (sp && !strcmp(sp, prof)) {
        if (!(r = s3_prof_keys(x, prof, &role->from)) && !role->from)
            r = tdb_err(x->err, TDB_E_INVAL, "profile %s: its "
                        "source_profile is itself, which has no keys", prof);
    } else if (sp) {
        if (!s3_prof_exists(x, sp))
            r = tdb_err(x->err, TDB_E_INVAL, "profile %s: source_profile %s "
                        "is in neither file", prof, sp);
        else if (!(r = s3_profile(x, sp, depth + 1, &role->from)) &&
                 !role->from)
            r = tdb_err(x->err, TDB_E_INVAL, "profile %s: source_profile %s "
                        "has no credentials", prof, sp);
    } else if (cs && !strcasecmp(cs, "Environment")) {
        if (!s3_env_set("AWS_ACCESS_KEY_ID"))
            r = tdb_err(x->err, TDB_E_INVAL, "profile %s: credential_source "
                        "Environment without AWS_ACCESS_KEY_ID", prof);
        else if (!(role->from = s3_src(TDB_S3_SRC_KEYS, "%s",
                                       "AWS_ACCESS_KEY_ID")) ||
                 !(role->from->id = s3_env("AWS_ACCESS_KEY_ID")) ||
                 (r = s3_dupenv(&role->from->secret,
                                "AWS_SECRET_ACCESS_KEY")) ||
                 (r = s3_dupenv(&role->from->token, "AWS_SESSION_TOKEN")))
            r = s3_nomem(x);
    } else if (cs && !strcasecmp(cs, "Ec2InstanceMetadata")) {
        if (!(role->from = s3_imds(x, &r)) && !r)
            r = tdb_err(x->err, TDB_E_INVAL, "profile %s: credential_source "
                        "Ec2InstanceMetadata with AWS_EC2_METADATA_DISABLED",
                        prof);
    } else if (cs && !strcasecmp(cs, "EcsContainer")) {
        if (!(role->from = s3_container(x, &r)) && !r)
            r = tdb_err(x->err, TDB_E_INVAL, "profile %s: credential_source "
                        "EcsContainer without AWS_CONTAINER_CREDENTIALS_"
                        "FULL_URI or _RELATIVE_URI", prof);
    } else if (cs) {
        r = tdb_err(x->err, TDB_E_INVAL, "profile %s: credential_source %s: "
                    "not Environment, Ec2InstanceMetadata or EcsContainer",
                    prof, cs);
    } else {
        r = tdb_err(x->err, TDB_E_INVAL, "profile %s: role_arn without "
                    "source_profile, credential_source or "
                    "web_identity_token_file", prof);
    }
    free(sp);
    free(cs);
    return r;
}

/* Profile prof's role: AssumeRole, or AssumeRoleWithWebIdentity with its
 * web_identity_token_file. */
static int s3_role(const struct s3_chain *x, const char *prof,
                   unsigned depth, char *arn, struct tdb_s3_source **out)
{
    char *wif = NULL, *dur = NULL;
    struct tdb_s3_source *src = NULL;
    int r = s3_prof_get(x, prof, "web_identity_token_file", &wif);
    if (depth >= S3_ROLE_DEPTH) {
        free(wif);
        free(arn);
        return tdb_err(x->err, TDB_E_INVAL, "profile %s: more than %d "
                       "profiles of roles chained (a loop of "
                       "source_profile?)", prof, S3_ROLE_DEPTH);
    }
    if (!r && !(src = s3_src(wif ? TDB_S3_SRC_WEB : TDB_S3_SRC_ROLE,
                             "profile %s's role_arn", prof)))
        r = TDB_E_NOMEM;
    if (src) {
        src->role_arn = arn;
        arn = NULL;
        src->token_file = wif;
        wif = NULL;
    }
    if (!r && !(r = s3_prof_get(x, prof, "role_session_name",
                                &src->session_name)) &&
        !(r = s3_prof_get(x, prof, "external_id", &src->external_id)) &&
        !(r = s3_prof_get(x, prof, "duration_seconds", &dur)))
        r = s3_sts_where(x, src);
    if (r) {
        r = s3_nomem(x);
    } else if (dur) {
        char *e = NULL;
        unsigned long d = strtoul(dur, &e, 10);
        if (e == dur || *e || d < 1 || d > 43200)
            r = tdb_err(x->err, TDB_E_INVAL, "profile %s: duration_seconds "
                        "%s: not a number of seconds up to 43200", prof, dur);
        else
            src->duration_s = (unsigned)d;
    }
    if (!r && src->kind == TDB_S3_SRC_ROLE)
        r = s3_role_from(x, prof, depth, src);
    free(dur);
    free(wif);
    free(arn);
    if (r)
        tdb_s3_source_free(src);
    else
        *out = src;
    return r;
}

/* The credentials of profile prof: a role (role_arn), static keys
 * (aws_access_key_id ...), or credential_process, in this order; *out
 * NULL when it has none. */
static int s3_profile(const struct s3_chain *x, const char *prof,
                      unsigned depth, struct tdb_s3_source **out)
{
    char *arn = NULL, *cmd = NULL;
    *out = NULL;
    if (s3_prof_get(x, prof, "role_arn", &arn))
        return s3_nomem(x);
    if (arn)
        return s3_role(x, prof, depth, arn, out);
    int r = s3_prof_keys(x, prof, out);
    if (r || *out)
        return r;
    if (s3_prof_get(x, prof, "credential_process", &cmd))
        return s3_nomem(x);
    if (!cmd)
        return 0;
    if (!(*out = s3_src(TDB_S3_SRC_PROCESS, "profile %s's "
                        "credential_process", prof))) {
        free(cmd);
        return s3_nomem(x);
    }
    (*out)->command = cmd;
    return 0;
}

/* Web identity of the environment: AWS_WEB_IDENTITY_TOKEN_FILE and
 * AWS_ROLE_ARN (AWS_ROLE_SESSION_NAME), or NULL. */
static int s3_web_env(const struct s3_chain *x, struct tdb_s3_source **out)
{
    *out = NULL;
    if (!s3_env_set("AWS_WEB_IDENTITY_TOKEN_FILE") ||
        !s3_env_set("AWS_ROLE_ARN"))
        return 0;
    struct tdb_s3_source *src = s3_src(TDB_S3_SRC_WEB, "%s",
                                       "AWS_WEB_IDENTITY_TOKEN_FILE");
    if (!src || !(src->token_file = s3_env("AWS_WEB_IDENTITY_TOKEN_FILE")) ||
        !(src->role_arn = s3_env("AWS_ROLE_ARN")) ||
        s3_dupenv(&src->session_name, "AWS_ROLE_SESSION_NAME") ||
        s3_sts_where(x, src)) {
        tdb_s3_source_free(src);
        return s3_nomem(x);
    }
    *out = src;
    return 0;
}

/* Takes a source found: static keys go to cfg's strings, the others are
 * fetched now (an error when that fails). */
static int s3_take(struct tdb_s3_config *cfg, struct tdb_s3_source *src,
                   struct tdb_error *err)
{
    if (src->kind == TDB_S3_SRC_KEYS) {
        cfg->access_key = src->id;
        cfg->secret_key = src->secret;
        cfg->session_token = src->token;
        src->id = src->secret = src->token = NULL;
        tdb_s3_source_free(src);
        return 0;
    }
    return tdb_s3_creds_new(&cfg->creds, src, err);
}

/* The credentials, in the order of AWS's SDKs (tiledb_format.h). */
static int s3_keys(struct tdb_s3_config *cfg, const struct s3_files *f,
                   const struct tdb_store_options *o, struct tdb_error *err)
{
    struct s3_chain x = {.f = f, .o = o, .region = cfg->region, .err = err};
    struct tdb_s3_source *src = NULL;
    int r = 0;

    /* 1. the environment's keys, unless the options name a profile or a
     * credentials file */
    if (s3_env_set("AWS_ACCESS_KEY_ID") && !o->profile &&
        !o->credentials_file) {
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
    /* 2. the profile; 3. web identity; 4. the container endpoint */
    if ((r = s3_profile(&x, f->prof, 0, &src)) || src)
        return r ? r : s3_take(cfg, src, err);
    if ((r = s3_web_env(&x, &src)) || src)
        return r ? r : s3_take(cfg, src, err);
    if ((src = s3_container(&x, &r)) || r)
        return r ? r : s3_take(cfg, src, err);
    /* 5. the instance metadata: none there is no error (requests go
     * unsigned, as to a public bucket) */
    if (!(src = s3_imds(&x, &r)))
        return r;
    struct tdb_error quiet = {0};
    r = tdb_s3_creds_new(&cfg->creds, src, &quiet);
    return r == TDB_E_NOMEM ? tdb_err(err, r, "%s", quiet.msg) : 0;
}

int tdb_s3_config_load_with(struct tdb_s3_config *cfg,
                            const struct tdb_store_options *o,
                            struct tdb_error *err)
{
    static const struct tdb_store_options none;
    struct s3_files f;
    int r;

    memset(cfg, 0, sizeof *cfg);
    if (!o)
        o = &none;
    r = s3_files_read(&f, o, err);
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
    if (!r)
        r = s3_keys(cfg, &f, o, err);
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
    if (cfg->session_token)
        explicit_bzero(cfg->session_token, strlen(cfg->session_token));
    free(cfg->access_key);
    free(cfg->secret_key);
    free(cfg->session_token);
    free(cfg->region);
    free(cfg->endpoint);
    tdb_s3_creds_unref(cfg->creds);
    memset(cfg, 0, sizeof *cfg);
}
