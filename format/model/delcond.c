/* delcond.c: delete commit files (format_spec/delete_commit_file.md): the
 * serialised query condition tree and its evaluation on one cell. */
#include "model/delcond.h"
#include "model/generic_tile.h"
#include "core/value.h"

#include <stdlib.h>

/* Deepest expression nesting we accept (guards the recursion). */
#define DELCOND_MAX_DEPTH 128


struct delcond_node {
    bool is_expr;
    uint8_t op;                  /* comparison or combination op */
    /* value nodes */
    char *field;
    uint8_t *data;
    uint64_t size;
    uint64_t *starts;            /* IN / NOT_IN: member start offsets */
    uint64_t nmembers;
    /* expression nodes */
    size_t nchild;
    struct delcond_node **child;
};

struct tdb_cond {
    struct delcond_node *root;
    size_t nfields;
    const char **fields;
};

static void delcond_node_free(struct delcond_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nchild; i++)
        delcond_node_free(n->child[i]);
    free(n->child);
    free(n->field);
    free(n->data);
    free(n->starts);
    free(n);
}

void tdb_cond_free(struct tdb_cond *c)
{
    if (!c)
        return;
    delcond_node_free(c->root);
    free(c->fields);
    free(c);
}

static int delcond_trunc(struct tdb_error *err, const char *what, size_t at)
{
    return tdb_err(err, TDB_E_CORRUPT,
                   "%s: delete condition node at byte %zu is truncated",
                   what, at);
}

/* The members of an IN or NOT_IN set (n's data read): uint64 start
 * offsets into the data, rising. */
static int delcond_read_set(struct tdb_cursor *c, struct delcond_node *n,
                            const char *what, size_t at,
                            struct tdb_error *err)
{
    uint64_t osize, dsize = n->size;
    const uint8_t *op_bytes;
    if (tdb_cur_u64(c, &osize) || osize > tdb_cur_left(c) ||
        tdb_cur_bytes(c, (size_t)osize, &op_bytes))
        return delcond_trunc(err, what, at);
    if (osize % 8 != 0 || dsize == 0 || osize == 0)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: delete condition set at byte %zu has %llu bytes "
                       "of values and %llu bytes of offsets", what, at,
                       (unsigned long long)dsize,
                       (unsigned long long)osize);
    n->nmembers = osize / 8;
    n->starts = malloc((size_t)osize);
    if (!n->starts)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", what);
    for (uint64_t i = 0; i < n->nmembers; i++) {
        n->starts[i] = tdb_le64(op_bytes + 8 * i);
        if ((i && n->starts[i] < n->starts[i - 1]) || n->starts[i] > dsize)
            return tdb_err(err, TDB_E_CORRUPT,
                           "%s: delete condition set at byte %zu has bad "
                           "offset %llu", what, at,
                           (unsigned long long)n->starts[i]);
    }
    return 0;
}

static int delcond_read_value(struct tdb_cursor *c, struct delcond_node *n,
                              const char *what, size_t at,
                              struct tdb_error *err)
{
    uint8_t op;
    uint32_t flen;
    uint64_t dsize;
    const uint8_t *fp, *dp;

    if (tdb_cur_u8(c, &op))
        return delcond_trunc(err, what, at);
    if (op > DELCOND_NOT_IN && op != DELCOND_ALWAYS_TRUE &&
        op != DELCOND_ALWAYS_FALSE)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: delete condition node at byte %zu has unknown "
                       "operator %u", what, at, op);
    n->op = op;
    if (tdb_cur_u32(c, &flen) || tdb_cur_bytes(c, flen, &fp))
        return delcond_trunc(err, what, at);
    if (flen == 0 || flen > TDB_MAX_NAME || memchr(fp, 0, flen))
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: delete condition node at byte %zu has a bad "
                       "field name", what, at);
    if (tdb_cur_u64(c, &dsize) || dsize > tdb_cur_left(c) ||
        tdb_cur_bytes(c, (size_t)dsize, &dp))
        return delcond_trunc(err, what, at);
    n->field = malloc((size_t)flen + 1);
    n->data = malloc(dsize ? (size_t)dsize : 1);
    if (!n->field || !n->data)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", what);
    memcpy(n->field, fp, flen);
    n->field[flen] = 0;
    if (dsize)
        memcpy(n->data, dp, (size_t)dsize);
    n->size = dsize;
    if (op != DELCOND_IN && op != DELCOND_NOT_IN)
        return 0;
    return delcond_read_set(c, n, what, at, err);
}

static int delcond_read_node(struct tdb_cursor *c, unsigned depth,
                             struct delcond_node **out, const char *what,
                             struct tdb_error *err);

/* An expression node's combination (AND, OR, NOT) and its children, at
 * depth, into n (which frees what was read on failure). */
static int delcond_read_expr(struct tdb_cursor *c, unsigned depth,
                             struct delcond_node *n, const char *what,
                             size_t at, struct tdb_error *err)
{
    uint8_t op;
    uint64_t count;
    n->is_expr = true;
    if (tdb_cur_u8(c, &op) || tdb_cur_u64(c, &count))
        return delcond_trunc(err, what, at);
    n->op = op;
    if (op != DELCOND_AND && op != DELCOND_OR && op != DELCOND_NOT)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: delete condition node at byte %zu has unknown "
                       "combination %u", what, at, op);
    /* NOT negates its one child; AND and OR take two or more (as TileDB
     * checks a tree); each child takes at least one byte. */
    if ((op == DELCOND_NOT ? count != 1 : count < 2) ||
        count > tdb_cur_left(c))
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: delete condition node at byte %zu has %llu "
                       "children", what, at, (unsigned long long)count);
    n->child = calloc((size_t)count, sizeof *n->child);
    if (!n->child)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", what);
    for (uint64_t i = 0; i < count; i++) {
        int r = delcond_read_node(c, depth + 1, &n->child[i], what, err);
        if (r)
            return r;
        n->nchild++;
    }
    return 0;
}

static int delcond_read_node(struct tdb_cursor *c, unsigned depth,
                             struct delcond_node **out, const char *what,
                             struct tdb_error *err)
{
    size_t at = c->pos;
    uint8_t type;
    int r;

    *out = NULL;
    if (depth > DELCOND_MAX_DEPTH)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: delete condition nested deeper than %d", what,
                       DELCOND_MAX_DEPTH);
    if (tdb_cur_u8(c, &type))
        return delcond_trunc(err, what, at);
    if (type != DELCOND_EXPR && type != DELCOND_VALUE)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: delete condition node at byte %zu has unknown "
                       "type %u", what, at, type);
    struct delcond_node *n = calloc(1, sizeof *n);
    if (!n)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", what);
    r = type == DELCOND_VALUE
            ? delcond_read_value(c, n, what, at, err)
            : delcond_read_expr(c, depth, n, what, at, err);
    if (r) {
        delcond_node_free(n);
        return r;
    }
    *out = n;
    return 0;
}

static int delcond_collect(struct tdb_cond *c, const struct delcond_node *n)
{
    if (n->is_expr) {
        for (size_t i = 0; i < n->nchild; i++)
            if (delcond_collect(c, n->child[i]))
                return -1;
        return 0;
    }
    for (size_t i = 0; i < c->nfields; i++)
        if (strcmp(c->fields[i], n->field) == 0)
            return 0;
    const char **v = realloc(c->fields, (c->nfields + 1) * sizeof *v);
    if (!v)
        return -1;
    c->fields = v;
    v[c->nfields++] = n->field;
    return 0;
}

int tdb_cond_parse(const uint8_t *p, size_t size, const char *what,
                   struct tdb_cond **out, struct tdb_error *err)
{
    struct tdb_cursor cur;
    int r;

    *out = NULL;
    struct tdb_cond *c = calloc(1, sizeof *c);
    if (!c)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", what);
    tdb_cur_init(&cur, p, size);
    if ((r = delcond_read_node(&cur, 0, &c->root, what, err))) {
        tdb_cond_free(c);
        return r;
    }
    /* Bytes after the tree (update values in .upd files) are not ours. */
    if (delcond_collect(c, c->root)) {
        tdb_cond_free(c);
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", what);
    }
    *out = c;
    return 0;
}

int tdb_cond_load_at(const struct tdb_io *io, const char *path, uint64_t off,
                     const uint8_t *key, struct tdb_cond **out,
                     struct tdb_error *err)
{
    struct tdb_buf buf = {0};
    uint64_t next;
    *out = NULL;
    int r = tdb_generic_tile_read(&(struct tdb_gt_file){io, path, off}, key,
                                  &buf, &next, err);
    if (r == 0)
        r = tdb_cond_parse(buf.data, buf.len, path, out, err);
    tdb_buf_free(&buf);
    return r;
}

int tdb_cond_load(const struct tdb_io *io, const char *path,
                  const uint8_t *key, struct tdb_cond **out,
                  struct tdb_error *err)
{
    return tdb_cond_load_at(io, path, 0, key, out, err);
}

size_t tdb_cond_fields(const struct tdb_cond *c, const char ***names)
{
    *names = c ? c->fields : NULL;
    return c ? c->nfields : 0;
}

/* ------------------------------------------------------------ evaluation */

/* How a field's values compare (query_condition.cc picks by datatype): as
 * strings (TDB_VC_STRING), as numbers of the datatype's class (a fixed
 * CHAR as the signed char it is there), or not at all (TDB_VC_NONE). */
static enum tdb_vclass delcond_class_of(unsigned type, bool var)
{
    if (type == TDB_STRING_ASCII || type == TDB_STRING_UTF8 ||
        (type == TDB_CHAR && var))
        return TDB_VC_STRING;
    if (type == TDB_CHAR)
        return TDB_VC_SIGNED;
    enum tdb_vclass c = tdb_value_class(type);
    return c == TDB_VC_SIGNED || c == TDB_VC_UNSIGNED || c == TDB_VC_FLOAT
               ? c : TDB_VC_NONE;
}

static bool delcond_in_set(const struct delcond_node *n, const uint8_t *v,
                           uint64_t size)
{
    for (uint64_t i = 0; i < n->nmembers; i++) {
        uint64_t s = n->starts[i];
        uint64_t e = i + 1 < n->nmembers ? n->starts[i + 1] : n->size;
        if (e - s == size && (size == 0 || memcmp(n->data + s, v, size) == 0))
            return true;
    }
    return false;
}

/* The cell's side of a comparison: its bytes (NULL: a null), their size
 * and type, and how they compare. */
struct delcond_lhs {
    const uint8_t *v;
    uint64_t size;
    unsigned type;
    enum tdb_vclass cls;
};

static int delcond_unsupported(const struct delcond_node *n, unsigned type,
                               struct tdb_error *err)
{
    return tdb_err(err, TDB_E_UNSUPPORTED,
                   "delete condition: field '%s' has datatype %s, which "
                   "conditions cannot compare", n->field,
                   tdb_dt_name(type) ? tdb_dt_name(type) : "unknown");
}

/* Compares the cell's value with the node's (rhs; NULL: a null test). */
static int delcond_compare(const struct delcond_node *n,
                           const struct delcond_lhs *l, const uint8_t *rhs,
                           bool *res, struct tdb_error *err)
{
    const uint8_t *lhs = l->v;
    switch (n->op) {
    case DELCOND_EQ:
        if (!lhs || !rhs) {
            *res = !lhs && !rhs;
            return 0;
        }
        break;
    case DELCOND_NE:
        if (!lhs || !rhs) {
            *res = lhs && !rhs;
            return 0;
        }
        break;
    default:
        if (!lhs)
            return 0;
        break;
    }
    int c;
    bool unordered = false;
    if (l->cls == TDB_VC_STRING) {
        c = tdb_bytes_cmp(lhs, l->size, rhs, n->size);
    } else {
        unsigned need = tdb_dt_size(l->type);
        if (n->size < need)
            return tdb_err(err, TDB_E_CORRUPT,
                           "delete condition on '%s': value of %llu bytes "
                           "for a %u-byte type", n->field,
                           (unsigned long long)n->size, need);
        if (l->size < need)
            return tdb_err(err, TDB_E_INVAL,
                           "delete condition: field '%s' has a %llu-byte "
                           "value", n->field, (unsigned long long)l->size);
        struct tdb_num x = tdb_num_load(l->cls, need, lhs);
        struct tdb_num y = tdb_num_load(l->cls, need, rhs);
        c = tdb_num_cmp(&x, &y, &unordered);
    }
    switch (n->op) {
    case DELCOND_LT: *res = !unordered && c < 0; break;
    case DELCOND_LE: *res = !unordered && c <= 0; break;
    case DELCOND_GT: *res = !unordered && c > 0; break;
    case DELCOND_GE: *res = !unordered && c >= 0; break;
    case DELCOND_EQ: *res = !unordered && c == 0; break;
    case DELCOND_NE: *res = unordered || c != 0; break;
    default: *res = false; break;
    }
    return 0;
}

/* One value node; *res gets its truth. */
static int delcond_eval_value(const struct delcond_node *n,
                              const struct tdb_cell_view *cell, bool *res,
                              struct tdb_error *err)
{
    const uint8_t *val = NULL;
    struct delcond_lhs l = {0};
    bool is_null = false;

    *res = false;
    if (n->op == DELCOND_ALWAYS_TRUE || n->op == DELCOND_ALWAYS_FALSE) {
        *res = n->op == DELCOND_ALWAYS_TRUE;
        return 0;
    }
    int r = cell->get(cell->arg, n->field, &val, &l.size, &l.type, &is_null);
    if (r == 1)
        return 0;                   /* field absent in this fragment */
    if (r < 0)
        return tdb_err(err, r, "delete condition: cannot read field '%s'",
                       n->field);
    if (!val && !is_null && l.size)
        return tdb_err(err, TDB_E_INVAL,
                       "delete condition: field '%s' has no value",
                       n->field);
    bool var = cell->is_var ? cell->is_var(cell->arg, n->field) : true;
    l.cls = delcond_class_of(l.type, var);
    l.v = is_null ? NULL : (val ? val : (const uint8_t *)"");

    /* Sets: the whole cell's bytes against each member. */
    if (n->op == DELCOND_IN || n->op == DELCOND_NOT_IN) {
        if (l.cls == TDB_VC_NONE)
            return delcond_unsupported(n, l.type, err);
        if (!l.v)
            return 0;
        bool in = delcond_in_set(n, l.v, l.size);
        *res = n->op == DELCOND_IN ? in : !in;
        return 0;
    }

    /* A value-less node: strings compare with "" (as TileDB reads it back);
     * other types take it as a null test. */
    const uint8_t *rhs = n->data;
    if (n->size == 0 && l.cls != TDB_VC_STRING) {
        if (n->op != DELCOND_EQ && n->op != DELCOND_NE)
            return tdb_err(err, TDB_E_CORRUPT,
                           "delete condition on '%s': empty value with an "
                           "ordering operator", n->field);
        rhs = NULL;
    } else if (l.cls == TDB_VC_NONE) {
        return delcond_unsupported(n, l.type, err);
    }
    return delcond_compare(n, &l, rhs, res, err);
}

static int delcond_eval_node(const struct delcond_node *n,
                             const struct tdb_cell_view *cell, bool *res,
                             struct tdb_error *err)
{
    if (!n->is_expr) {
        int r = delcond_eval_value(n, cell, res, err);
        /* The value was compared: the view may let go of it. */
        if (cell->release)
            cell->release(cell->arg);
        return r;
    }
    if (n->op == DELCOND_NOT) {
        bool v;
        int r = delcond_eval_node(n->child[0], cell, &v, err);
        *res = !v;
        return r;
    }
    /* AND stops at the first false child, OR at the first true one. */
    bool is_and = n->op == DELCOND_AND;
    *res = is_and;
    for (size_t i = 0; i < n->nchild; i++) {
        bool v;
        int r = delcond_eval_node(n->child[i], cell, &v, err);
        if (r)
            return r;
        if (is_and ? !v : v) {
            *res = v;
            return 0;
        }
    }
    return 0;
}

int tdb_cond_eval(const struct tdb_cond *c, const struct tdb_cell_view *cell,
                  struct tdb_error *err)
{
    if (!c || !c->root || !cell || !cell->get)
        return tdb_err(err, TDB_E_INVAL, "delete condition: bad arguments");
    bool keep;
    int r = delcond_eval_node(c->root, cell, &keep, err);
    if (r)
        return r;
    return keep ? 0 : 1;
}
