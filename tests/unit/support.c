/* support.c: the shared helpers of the unit tests (see support.h). */
#include "support.h"
#include "tiledb_format_write.h"

#include <ftw.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- the corpus */

const char *unit_corpus(void)
{
    const char *c = getenv("TILEDBFS_CORPUS");
    return c && *c ? c : "tests/corpus";
}

const char *unit_program(void)
{
    const char *name = program_invocation_name, *last = NULL, *prev = NULL;
    for (const char *c = name; *c; c++)
        if (*c == '/') {
            prev = last;
            last = c;
        }
    return prev ? prev + 1 : name;
}

bool unit_corpus_found(void)
{
    static int found = -1;
    if (found >= 0)
        return found;
    const char *root = unit_corpus();
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/dense_1d_basic/case.json", root);
    found = access(probe, R_OK) == 0;
    if (!found) {
        char cwd[PATH_MAX] = "?", line[2 * PATH_MAX + 512];
        const char *env = getenv("TILEDBFS_CORPUS");
        if (!getcwd(cwd, sizeof cwd))
            snprintf(cwd, sizeof cwd, "(cwd: %s)", strerror(errno));
        snprintf(line, sizeof line,
                 "SKIP corpus: %s: no reference corpus at %s%s%s (%s): its "
                 "corpus tests did not run; set TILEDBFS_CORPUS=DIR\n",
                 unit_program(), root[0] == '/' ? "" : cwd,
                 root[0] == '/' ? "" : "/", root,
                 env && *env ? "from TILEDBFS_CORPUS"
                             : "the default; TILEDBFS_CORPUS is not set");
        fputs(line, stdout);
        fflush(stdout);
        /* make check: also on the console (AM_TESTS_FD_REDIRECT) */
        const char *con = getenv("TILEDBFS_TEST_CONSOLE");
        if (con && *con)
            dprintf(atoi(con), "%s", line);
    }
    return found;
}

void unit_timestamp_range(const char *opts, uint64_t *t0, uint64_t *t1)
{
    *t0 = 0;
    *t1 = UINT64_MAX;
    const char *p = strstr(opts, "timestamp=");
    if (!p)
        return;
    p += strlen("timestamp=");
    char *end;
    uint64_t a = strtoull(p, &end, 10);
    if (*end == ':') {
        *t0 = a;
        *t1 = strtoull(end + 1, NULL, 10);
    } else {
        *t1 = a;
    }
}

/* ------------------------------------------------------------------ files */

char *unit_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1)) &&
        fread(b, 1, (size_t)n, f) == (size_t)n) {
        b[n] = 0;
        if (len)
            *len = (size_t)n;
    } else {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

bool unit_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int unit_copy_tree(const struct tdb_io *src, const char *sp,
                   const struct tdb_io *dst, const char *dp)
{
    struct tdb_names n;
    int r = tdb_io_names(src, sp, &n, NULL);
    if (r)
        return r;
    dst->ops->mkdir(dst->ctx, dp);
    for (size_t i = 0; i < n.n && !r; i++) {
        char *a = tdb_path_join(sp, n.v[i]), *b = tdb_path_join(dp, n.v[i]);
        if (n.is_dir[i]) {
            r = unit_copy_tree(src, a, dst, b);
        } else {
            uint8_t *data = NULL;
            uint64_t size = 0;
            r = tdb_io_read_file(src, a, &data, &size, NULL);
            if (!r)
                r = dst->ops->write_at(dst->ctx, b, 0, data, (size_t)size);
            free(data);
        }
        free(a);
        free(b);
    }
    tdb_names_free(&n);
    return r;
}

void unit_snapshot(const struct tdb_io *io, const char *path, bool hash,
                   struct tdb_buf *out)
{
    struct tdb_names n;
    CHECK_EQ_INT(tdb_io_names(io, path, &n, NULL), 0);
    for (size_t i = 0; i < n.n; i++) {
        char *p = tdb_path_join(path, n.v[i]);
        uint8_t *data = NULL;
        uint64_t size = 0, h = 1469598103934665603ull;
        if (!n.is_dir[i] && hash)
            CHECK_EQ_INT(tdb_io_read_file(io, p, &data, &size, NULL), 0);
        else if (!n.is_dir[i])
            CHECK_EQ_INT(io->ops->size(io->ctx, p, &size), 0);
        for (uint64_t k = 0; k < size && data; k++)
            h = (h ^ data[k]) * 1099511628211ull;
        free(data);
        char line[1200];
        int k = hash && !n.is_dir[i]
                    ? snprintf(line, sizeof line, "%s %llu %016llx\n", p,
                               (unsigned long long)size,
                               (unsigned long long)h)
                    : snprintf(line, sizeof line, "%s%s %llu\n", p,
                               n.is_dir[i] ? "/" : "",
                               (unsigned long long)size);
        CHECK_EQ_INT(tdb_buf_append(out, line, (size_t)k), 0);
        if (n.is_dir[i])
            unit_snapshot(io, p, hash, out);
        free(p);
    }
    tdb_names_free(&n);
}

int unit_array_from_case(const char *name, struct tdb_io *mem)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/array", unit_corpus(), name);
    struct tdb_io src;
    if (tdb_io_posix(&src, path))
        return -1;
    if (tdb_io_mem(mem)) {
        tdb_io_free(&src);
        return -1;
    }
    int r = unit_copy_tree(&src, "__schema", mem, "__schema");
    tdb_io_free(&src);
    return r;
}

bool unit_same_bytes(const char *what, const uint8_t *a, uint64_t na,
                     const uint8_t *b, uint64_t nb)
{
    if (na != nb) {
        fprintf(stderr, "  %s: %llu bytes, expected %llu\n", what,
                (unsigned long long)na, (unsigned long long)nb);
        return false;
    }
    for (uint64_t i = 0; i < na; i++)
        if (a[i] != b[i]) {
            fprintf(stderr, "  %s: byte %llu is %02x, expected %02x\n", what,
                    (unsigned long long)i, a[i], b[i]);
            return false;
        }
    return true;
}

/* ------------------------------------------------------ the tree (tdb_fs) */

struct tdb_fs *unit_open_case(const char *name,
                              const struct tdb_open_options *o,
                              struct tdb_io *io)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/array", unit_corpus(), name);
    struct tdb_open_options def;
    if (!o) {
        tdb_open_options_init(&def);
        o = &def;
    }
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    if (tdb_io_posix(io, path)) {
        fprintf(stderr, "open %s: cannot open %s\n", name, path);
        return NULL;
    }
    if (tdb_fs_open(&fs, io, o, &err)) {
        fprintf(stderr, "open %s: %s\n", name, err.msg);
        tdb_io_free(io);
        return NULL;
    }
    return fs;
}

int unit_fs_copy(struct tdb_fs *fs, uint64_t ino, uint64_t off, void *buf,
                 size_t *len, struct tdb_error *err)
{
    struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY, buf);
    int r = tdb_fs_read(fs, ino, off, *len, &s, err);
    *len = s.got;
    tdb_sink_release(&s);
    return r;
}

int unit_reader_copy(struct tdb_reader *rd, uint64_t off, void *buf,
                     size_t len, size_t *got, struct tdb_error *err)
{
    struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY, buf);
    int r = tdb_reader_read(rd, off, len, &s, err);
    *got = s.got;
    tdb_sink_release(&s);
    return r;
}

uint8_t *unit_fs_read_all(struct tdb_fs *fs, uint64_t ino, uint64_t *size)
{
    struct tdb_stat st;
    struct tdb_error err = {0};
    if (tdb_fs_stat(fs, ino, &st, &err))
        return NULL;
    uint8_t *b = malloc(st.size + 1);
    size_t got = (size_t)st.size;
    if (!b || unit_fs_copy(fs, ino, 0, b, &got, &err) ||
        got != st.size) {
        free(b);
        return NULL;
    }
    b[got] = 0;
    *size = st.size;
    return b;
}

uint8_t *unit_fs_file(struct tdb_fs *fs, const char *path, uint64_t *size)
{
    uint64_t ino;
    struct tdb_error err = {0};
    if (tdb_fs_resolve(fs, path, &ino, &err)) {
        fprintf(stderr, "  %s: %s\n", path, err.msg);
        return NULL;
    }
    uint8_t *b = unit_fs_read_all(fs, ino, size);
    if (!b)
        fprintf(stderr, "  %s: cannot be read whole\n", path);
    return b;
}

/* ------------------------------------------------------------ made arrays */

static int unit_rm_one(const char *p, const struct stat *st, int flag,
                       struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void unit_rm_rf(const char *path)
{
    nftw(path, unit_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *unit_temp_dir(const char *tag)
{
    char *t = malloc(strlen(tag) + 32);
    if (t)
        sprintf(t, "/tmp/tdb_test_%s.XXXXXX", tag);
    if (t && !mkdtemp(t)) {
        free(t);
        return NULL;
    }
    return t;
}

int unit_dense_f32(struct tdb_io *arr, const char *dir, int rows, int cols,
                   int ty, int tx, const char *filter)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"type\": \"array\", \"schema\": {\"array_type\": "
             "\"dense\", \"dims\": [{\"name\": \"y\", \"datatype\": "
             "\"INT32\", \"domain\": [0, %d], \"tile_extent\": %d}, "
             "{\"name\": \"x\", \"datatype\": \"INT32\", \"domain\": "
             "[0, %d], \"tile_extent\": %d}], \"attrs\": [{\"name\": "
             "\"v\", \"datatype\": \"FLOAT32\", \"filters\": [%s]}]}}",
             rows - 1, ty, cols - 1, tx, filter);
    size_t n = (size_t)rows * (size_t)cols;
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    struct tdb_io stg;
    float *v = malloc(n * sizeof *v);
    int r = !v ? TDB_E_NOMEM : dir ? tdb_io_posix(arr, dir) : tdb_io_mem(arr);
    if (!r && (r = tdb_io_mem(&stg)) != 0)
        tdb_io_free(arr);
    if (r) {
        free(v);
        return r;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(i % 977) * 0.5f;
    char *name = NULL;
    if (!(r = tdb_schema_from_json(text, strlen(text), &s, &err)) &&
        !(r = tdb_array_create(arr, s, NULL, 1, &err)) &&
        !(r = stg.ops->write_at(stg.ctx, "s/v", 0, v, n * sizeof *v)))
        r = unit_write(arr, &stg, "s", NULL, 2, 0, &name, &err);
    if (r)
        fprintf(stderr, "  dense array: %s\n", err.msg);
    free(name);
    tdb_schema_free(s);
    tdb_io_free(&stg);
    free(v);
    if (r)
        tdb_io_free(arr);
    return r;
}

/* unit_expected_diff's walk (nftw passes no argument). */
static struct {
    size_t rootlen;
    struct tdb_fs *fs;
    const char *skip;
    int bad;
} unit_exp;

static int unit_exp_one(const char *path, const struct stat *st, int kind,
                        struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    const char *rel = path + unit_exp.rootlen + 1;
    if (kind != FTW_F ||
        (unit_exp.skip && !strncmp(rel, unit_exp.skip,
                                   strlen(unit_exp.skip))))
        return 0;
    size_t n;
    uint64_t m;
    char *want = unit_slurp(path, &n);
    uint8_t *got = unit_fs_file(unit_exp.fs, rel, &m);
    if (!want || !got || !unit_same_bytes(rel, got, m, (uint8_t *)want, n))
        unit_exp.bad++;
    free(want);
    free(got);
    return 0;
}

int unit_expected_diff(const char *root, struct tdb_fs *fs, const char *skip)
{
    unit_exp.rootlen = strlen(root);
    unit_exp.fs = fs;
    unit_exp.skip = skip;
    unit_exp.bad = 0;
    nftw(root, unit_exp_one, 16, FTW_PHYS);
    return unit_exp.bad;
}

/* ------------------------------------------------------------ S3's setting */

void unit_aws_env_clear(void)
{
    static const char *const vars[] = {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
        "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
    /* the end of the credential chain: never the real 169.254.169.254 */
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}
