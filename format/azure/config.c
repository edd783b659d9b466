/* config.c: where and as whom an azure:// mount connects, found as
 * Azure's tools find it: connection strings (from a file or
 * AZURE_STORAGE_CONNECTION_STRING), AZURE_STORAGE_ACCOUNT with its key or
 * SAS token, and the mount's options over them. */
#include "azure/azure.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define AZ_FILE_MAX (1u << 20)   /* a credentials file's size at most */

/* ------------------------------------------------------------- checks */

static bool az_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Azure's rule for an account's name: 3 to 24 lower-case letters and
 * digits (it also keeps the Authorization value and a host name sane). */
static bool az_account_ok(const char *a)
{
    size_t n = strlen(a);
    for (size_t i = 0; i < n; i++)
        if (!(a[i] >= 'a' && a[i] <= 'z') && !(a[i] >= '0' && a[i] <= '9'))
            return false;
    return n >= 3 && n <= 24;
}

/* Bytes a URL or a query may carry as they are: no blanks, no controls,
 * nothing that would end a query ('#'). */
static bool az_sendable(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p == 0x7f || *p == '#')
            return false;
    return true;
}

/* An endpoint as it is kept: http(s)://HOST[...], no trailing '/'.
 * @return a new string, or NULL with *why. */
static char *az_endpoint(const char *v, const char **why)
{
    size_t skip = !strncasecmp(v, "https://", 8) ? 8
                  : !strncasecmp(v, "http://", 7) ? 7 : 0;
    size_t n = strlen(v);
    while (n > skip && v[n - 1] == '/')
        n--;
    *why = NULL;
    if (!skip)
        *why = "not an http:// or https:// URL";
    else if (n == skip || v[skip] == '/')
        *why = "no host";
    else if (!az_sendable(v) || strchr(v, '?'))
        *why = "holds a blank, a control character, '?' or '#'";
    if (*why)
        return NULL;
    char *e = strndup(v, n);
    if (!e)
        *why = "out of memory";
    return e;
}

/* ------------------------------------------------- connection strings */

/* The values a connection string gave (NULL: not given), pointing into
 * a copy of the text. */
struct az_parts {
    char *copy;
    const char *proto, *account, *key, *blob, *suffix, *sas, *dev;
};

/* Splits text into az_parts.  @return 0, TDB_E_INVAL, TDB_E_NOMEM. */
static int az_split(struct az_parts *p, const char *text,
                    struct tdb_error *err)
{
    memset(p, 0, sizeof *p);
    if (!(p->copy = strdup(text)))
        return tdb_err(err, TDB_E_NOMEM, "connection string: out of memory");
    unsigned part = 0;
    for (char *s = p->copy, *next; s; s = next) {
        size_t len = strcspn(s, ";\n");
        next = s[len] ? s + len + 1 : NULL;
        s[len] = 0;
        part++;
        while (az_space(*s))
            s++;
        char *e = s + strlen(s);
        while (e > s && az_space(e[-1]))
            *--e = 0;
        if (!*s)
            continue;   /* a blank part: "a=1;;b=2", a trailing ';' */
        char *eq = strchr(s, '=');
        if (!eq)
            return tdb_err(err, TDB_E_INVAL, "connection string: part %u "
                           "is not Key=Value", part);
        char *ke = eq, *v = eq + 1;
        while (ke > s && az_space(ke[-1]))
            ke--;
        *ke = 0;
        while (az_space(*v))
            v++;
        static const struct {
            const char *name;
            size_t off;
        } keys[] = {
            {"DefaultEndpointsProtocol", offsetof(struct az_parts, proto)},
            {"AccountName", offsetof(struct az_parts, account)},
            {"AccountKey", offsetof(struct az_parts, key)},
            {"BlobEndpoint", offsetof(struct az_parts, blob)},
            {"EndpointSuffix", offsetof(struct az_parts, suffix)},
            {"SharedAccessSignature", offsetof(struct az_parts, sas)},
            {"UseDevelopmentStorage", offsetof(struct az_parts, dev)},
        };
        /* the last of a key given twice wins; unknown keys (QueueEndpoint,
         * TableEndpoint, FileEndpoint, ...) are other services' */
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            if (!strcasecmp(s, keys[i].name))
                *(const char **)((char *)p + keys[i].off) = v;
    }
    return 0;
}

static void az_parts_free(struct az_parts *p)
{
    if (p->copy)
        explicit_bzero(p->copy, strlen(p->copy));
    free(p->copy);
}

/* The account a BlobEndpoint's host names: ACCOUNT.blob.SUFFIX. */
static char *az_account_of(const char *endpoint)
{
    const char *h = strstr(endpoint, "://");
    if (!h)
        return NULL;
    h += 3;
    const char *dot = strchr(h, '.');
    if (!dot || strncmp(dot, ".blob.", 6) || dot == h)
        return NULL;
    return strndup(h, (size_t)(dot - h));
}

static int az_nomem(struct tdb_error *err)
{
    return tdb_err(err, TDB_E_NOMEM, "azure://: out of memory");
}

/* Zeroes and frees a secret string. */
static void az_free_secret(char *s)
{
    if (s)
        explicit_bzero(s, strlen(s));
    free(s);
}

/* A SAS as it is kept: no leading '?'; empty: NULL.  @return 0,
 * TDB_E_INVAL (what: where it came from), TDB_E_NOMEM. */
static int az_set_sas(char **dst, const char *v, const char *what,
                      struct tdb_error *err)
{
    if (v[0] == '?')
        v++;
    if (!v[0])
        return 0;
    if (!az_sendable(v))
        return tdb_err(err, TDB_E_INVAL, "%s: holds a blank, a control "
                       "character or '#'", what);
    az_free_secret(*dst);
    return (*dst = strdup(v)) ? 0 : az_nomem(err);
}

/* A base64 key into cfg.  @return 0, TDB_E_INVAL naming `what`,
 * TDB_E_NOMEM. */
static int az_set_key(struct tdb_az_config *cfg, const char *b64,
                      const char *what, struct tdb_error *err)
{
    unsigned char *k = NULL;
    size_t n = 0;
    int r = tdb_az_key_decode(b64, &k, &n);
    if (r == TDB_E_INVAL)
        return tdb_err(err, r, "%s is not base64", what);
    if (r)
        return az_nomem(err);
    if (cfg->key)
        explicit_bzero(cfg->key, cfg->keylen);
    free(cfg->key);
    cfg->key = k;
    cfg->keylen = n;
    return 0;
}

/* A word of two: yes (*out true) or no (*out false), in any case.
 * @return 0, or -1 when v is neither. */
static int az_word(const char *v, const char *yes, const char *no, bool *out)
{
    if (!strcasecmp(v, yes))
        *out = true;
    else if (!strcasecmp(v, no))
        *out = false;
    else
        return -1;
    return 0;
}

/* UseDevelopmentStorage (*dev, else false) and DefaultEndpointsProtocol
 * (*https, else true) of the string's parts p.  @return 0 or
 * TDB_E_INVAL. */
static int az_connstr_flags(const struct az_parts *p, bool *dev, bool *https,
                            struct tdb_error *err)
{
    *dev = false;
    *https = true;
    if (p->dev && az_word(p->dev, "true", "false", dev))
        return tdb_err(err, TDB_E_INVAL, "connection string: "
                       "UseDevelopmentStorage=%.16s: neither true nor "
                       "false", p->dev);
    if (p->proto && az_word(p->proto, "https", "http", https))
        return tdb_err(err, TDB_E_INVAL, "connection string: "
                       "DefaultEndpointsProtocol=%.16s: neither http nor "
                       "https", p->proto);
    return 0;
}

/* The account of parts p into cfg: AccountName, the development one, or
 * the one the endpoint names; none is an error when need_account.
 * @return 0, TDB_E_INVAL, TDB_E_NOMEM. */
static int az_connstr_account(struct tdb_az_config *cfg,
                              const struct az_parts *p, bool dev,
                              bool need_account, struct tdb_error *err)
{
    bool named = p->account && p->account[0];
    if (named)
        cfg->account = strdup(p->account);
    else if (dev)
        cfg->account = strdup(TDB_AZ_DEV_ACCOUNT);
    else if (cfg->endpoint)
        cfg->account = az_account_of(cfg->endpoint);
    if ((named || dev) && !cfg->account)
        return az_nomem(err);
    if (!cfg->account && need_account)
        return tdb_err(err, TDB_E_INVAL, "connection string: no AccountName");
    if (cfg->account && !az_account_ok(cfg->account))
        return tdb_err(err, TDB_E_INVAL, "connection string: AccountName="
                       "%.64s: not 3 to 24 lower-case letters and digits",
                       cfg->account);
    return 0;
}

/* The key (AccountKey, or the development one) and the SAS of parts p
 * into cfg.  @return 0, TDB_E_INVAL, TDB_E_NOMEM. */
static int az_connstr_secrets(struct tdb_az_config *cfg,
                              const struct az_parts *p, bool dev,
                              struct tdb_error *err)
{
    int r = 0;
    if (p->key && p->key[0])
        r = az_set_key(cfg, p->key, "connection string: AccountKey", err);
    else if (dev)
        r = az_set_key(cfg, TDB_AZ_DEV_KEY, "the development key", err);
    if (!r && p->sas)
        r = az_set_sas(&cfg->sas, p->sas, "connection string: "
                       "SharedAccessSignature", err);
    return r;
}

/* cfg's endpoint when the string named none: the development one, or
 * the account's under EndpointSuffix (else core.windows.net).  @return
 * 0, TDB_E_INVAL, TDB_E_NOMEM. */
static int az_connstr_endpoint(struct tdb_az_config *cfg,
                               const struct az_parts *p, bool dev,
                               bool https, struct tdb_error *err)
{
    if (cfg->endpoint)
        return 0;
    if (dev)
        return (cfg->endpoint = strdup(TDB_AZ_DEV_ENDPOINT)) ? 0
                                                             : az_nomem(err);
    if (!cfg->account)
        return 0;
    const char *suffix = p->suffix && p->suffix[0] ? p->suffix
                                                   : "core.windows.net";
    if (!az_sendable(suffix) || strpbrk(suffix, "/?"))
        return tdb_err(err, TDB_E_INVAL, "connection string: "
                       "EndpointSuffix=%.64s: not a host name", suffix);
    if (asprintf(&cfg->endpoint, "%s://%s.blob.%s", https ? "https" : "http",
                 cfg->account, suffix) < 0) {
        cfg->endpoint = NULL;
        return az_nomem(err);
    }
    return 0;
}

/* The connection string's values into cfg; without need_account a
 * string naming no account is taken too (the caller names one). */
static int az_connstr(struct tdb_az_config *cfg, const char *text,
                      bool need_account, struct tdb_error *err)
{
    struct az_parts p;
    bool dev = false, https = true;
    const char *why;
    memset(cfg, 0, sizeof *cfg);
    int r = az_split(&p, text, err);
    if (!r)
        r = az_connstr_flags(&p, &dev, &https, err);
    if (!r && p.blob && p.blob[0] &&
        !(cfg->endpoint = az_endpoint(p.blob, &why)))
        r = tdb_err(err, TDB_E_INVAL, "connection string: BlobEndpoint="
                    "%.256s: %s", p.blob, why);
    if (!r)
        r = az_connstr_account(cfg, &p, dev, need_account, err);
    if (!r)
        r = az_connstr_secrets(cfg, &p, dev, err);
    if (!r)
        r = az_connstr_endpoint(cfg, &p, dev, https, err);
    az_parts_free(&p);
    if (r)
        tdb_az_config_free(cfg);
    return r;
}

int tdb_az_connstr(struct tdb_az_config *cfg, const char *text,
                   struct tdb_error *err)
{
    int r = az_connstr(cfg, text, true, err);
    /* the key signs: a SAS beside it is never sent */
    if (!r && cfg->key && cfg->sas) {
        az_free_secret(cfg->sas);
        cfg->sas = NULL;
    }
    return r;
}

void tdb_az_config_free(struct tdb_az_config *cfg)
{
    if (!cfg)
        return;
    if (cfg->key)
        explicit_bzero(cfg->key, cfg->keylen);
    free(cfg->key);
    az_free_secret(cfg->sas);
    free(cfg->account);
    free(cfg->endpoint);
    memset(cfg, 0, sizeof *cfg);
}

/* ------------------------------------------------------ the whole chain */

/* A credentials file's text (at most AZ_FILE_MAX bytes).  @return it
 * (free it zeroed), or NULL with *why. */
static char *az_read_file(const char *path, char why[128])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    char *text = NULL;
    size_t len = 0;
    why[0] = 0;
    char buf[128];
    if (fd < 0 || fstat(fd, &st)) {
        snprintf(why, 128, "%s", strerror_r(errno, buf, sizeof buf));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, 128, "%s", S_ISDIR(st.st_mode) ? "a folder"
                                                     : "not a regular file");
        goto out;
    }
    if (st.st_size > (off_t)AZ_FILE_MAX) {
        snprintf(why, 128, "larger than %u bytes", AZ_FILE_MAX);
        goto out;
    }
    if (!(text = malloc((size_t)st.st_size + 1))) {
        snprintf(why, 128, "out of memory");
        goto out;
    }
    while (len < (size_t)st.st_size) {
        ssize_t got = read(fd, text + len, (size_t)st.st_size - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(why, 128, "%s", strerror_r(errno, buf, sizeof buf));
            explicit_bzero(text, len);
            free(text);
            text = NULL;
            goto out;
        }
        if (got == 0)
            break;   /* it shrank while read */
        len += (size_t)got;
    }
    text[len] = 0;
out:
    if (fd >= 0)
        close(fd);
    return text;
}

static const char *az_env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

/* The account, key and SAS of the environment's variables without a
 * connection string. */
static int az_from_env(struct tdb_az_config *cfg, const char *account,
                       struct tdb_error *err)
{
    const char *env_account = az_env("AZURE_STORAGE_ACCOUNT");
    const char *name = account ? account : env_account;
    if (name && !(cfg->account = strdup(name)))
        return az_nomem(err);
    /* a key or token of another account than the one asked for would
     * only be refused */
    if (account && env_account && strcmp(account, env_account))
        return 0;
    const char *key = az_env("AZURE_STORAGE_KEY");
    const char *sas = az_env("AZURE_STORAGE_SAS_TOKEN");
    int r = key ? az_set_key(cfg, key, "AZURE_STORAGE_KEY", err) : 0;
    if (!r && sas)
        r = az_set_sas(&cfg->sas, sas, "AZURE_STORAGE_SAS_TOKEN", err);
    return r;
}

/* The connection string of credentials_file, or else of the
 * environment, into cfg; none: *found false. */
static int az_from_connstr(struct tdb_az_config *cfg, const char *account,
                           const char *file, bool *found,
                           struct tdb_error *err)
{
    char why[128];
    char *text = NULL;
    const char *cs = NULL;
    *found = false;
    if (file) {
        if (!(text = az_read_file(file, why)))
            return tdb_err(err, TDB_E_INVAL, "credentials_file=%s: cannot "
                           "read it: %s", file, why);
        cs = text;
    } else if (!(cs = az_env("AZURE_STORAGE_CONNECTION_STRING"))) {
        return 0;
    }
    *found = true;
    int r = az_connstr(cfg, cs, false, err);
    if (text) {
        explicit_bzero(text, strlen(text));
        free(text);
    }
    if (r)
        return file ? tdb_err_ctx(err, r, "credentials_file=%s", file)
                    : tdb_err_ctx(err, r, "AZURE_STORAGE_CONNECTION_STRING");
    if (account && cfg->account && strcmp(account, cfg->account))
        return tdb_err(err, TDB_E_INVAL, "account=%.64s: the connection "
                       "string of %s names account %s", account,
                       file ? file : "AZURE_STORAGE_CONNECTION_STRING",
                       cfg->account);
    if (account && !cfg->account && !(cfg->account = strdup(account)))
        return az_nomem(err);
    return 0;
}

int tdb_az_config_load(struct tdb_az_config *cfg, const char *endpoint,
                       const char *account, const char *credentials_file,
                       struct tdb_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    bool found;
    const char *why;
    int r = az_from_connstr(cfg, account, credentials_file, &found, err);
    if (!r && !found)
        r = az_from_env(cfg, account, err);
    if (r)
        goto fail;
    r = TDB_E_INVAL;
    if (!cfg->account) {
        tdb_err(err, r, "azure://: no storage account (AZURE_STORAGE_ACCOUNT, "
                "AZURE_STORAGE_CONNECTION_STRING or -o account=)");
        goto fail;
    }
    if (!az_account_ok(cfg->account)) {
        tdb_err(err, r, "azure://: account %.64s: not 3 to 24 lower-case "
                "letters and digits", cfg->account);
        goto fail;
    }
    if (endpoint) {
        char *e = az_endpoint(endpoint, &why);
        if (!e) {
            tdb_err(err, r, "endpoint=%.256s: %s", endpoint, why);
            goto fail;
        }
        free(cfg->endpoint);
        cfg->endpoint = e;
    }
    if (!cfg->endpoint &&
        asprintf(&cfg->endpoint, "https://%s.blob.core.windows.net",
                 cfg->account) < 0) {
        cfg->endpoint = NULL;
        r = az_nomem(err);
        goto fail;
    }
    /* the key signs: a SAS beside it is never sent */
    if (cfg->key && cfg->sas) {
        az_free_secret(cfg->sas);
        cfg->sas = NULL;
    }
    return 0;
fail:
    tdb_az_config_free(cfg);
    return r;
}
