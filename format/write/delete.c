/* delete.c: a delete commit (format_spec/delete_commit_file.md) made from
 * a condition in TileDB-Py's QueryCondition syntax, as TileDB's delete
 * query writes one: the condition checked against the array's newest
 * schema, negated (the cells to keep) and serialized as a generic tile,
 * __commits/__t_t_<uuid>_22.del. */
#include "write/writer.h"
#include "core/value.h"
#include "model/arraydir.h"
#include "model/delcond.h"
#include "model/schemas.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define DC_MAX_DEPTH 64
#define DC_MAX_TEXT (64u << 10)

struct dc_node {
    bool expr;
    uint8_t op;                 /* DELCOND_AND/DELCOND_OR, or a comparison */
    struct dc_node **kids;
    size_t nkids;
    char *field;                /* value nodes */
    struct tdb_buf data;        /* the value(s) as the field stores them */
    uint64_t *offs;             /* IN / NOT_IN: each member's start */
    size_t noffs;
};

static void dc_free(struct dc_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nkids; i++)
        dc_free(n->kids[i]);
    free(n->kids);
    free(n->field);
    tdb_buf_free(&n->data);
    free(n->offs);
    free(n);
}

/* The negation TileDB stores, pushed down to the comparisons
 * (ASTNode::get_negated_tree): AND and OR swap, each comparison turns
 * into its opposite. */
static void dc_negate(struct dc_node *n)
{
    static const uint8_t opp[8] = {DELCOND_GE, DELCOND_GT, DELCOND_LE, DELCOND_LT,
                                   DELCOND_NE, DELCOND_EQ, DELCOND_NOT_IN, DELCOND_IN};
    if (n->expr) {
        n->op = n->op == DELCOND_AND ? DELCOND_OR : DELCOND_AND;
        for (size_t i = 0; i < n->nkids; i++)
            dc_negate(n->kids[i]);
    } else {
        n->op = opp[n->op];
    }
}

/* lhs OP rhs as TileDB's combine makes it: an operand that is itself
 * OP gives its children (a and b and c: one AND of three). */
static struct dc_node *dc_combine(struct dc_node *l, struct dc_node *r,
                                  uint8_t op)
{
    struct dc_node *n = calloc(1, sizeof *n);
    size_t nl = l->expr && l->op == op ? l->nkids : 1;
    size_t nr = r->expr && r->op == op ? r->nkids : 1;
    if (!n || !(n->kids = calloc(nl + nr, sizeof *n->kids))) {
        free(n);
        return NULL;
    }
    n->expr = true;
    n->op = op;
    struct dc_node *side[2] = {l, r};
    for (int s = 0; s < 2; s++) {
        struct dc_node *x = side[s];
        if (x->expr && x->op == op) {
            for (size_t i = 0; i < x->nkids; i++)
                n->kids[n->nkids++] = x->kids[i];
            x->nkids = 0;
            dc_free(x);
        } else {
            n->kids[n->nkids++] = x;
        }
    }
    return n;
}

/* ------------------------------------------------------------- tokens */

enum dc_tok { T_END, T_NAME, T_INT, T_FLOAT, T_STR, T_OP, T_LP, T_RP, T_LB,
              T_RB, T_COMMA, T_AND, T_OR, T_BAD };

struct dc_parse {
    const char *s, *end, *p;
    const struct tdb_schema *schema;
    struct tdb_error *err;
    /* the token at p */
    enum dc_tok tok;
    const char *ts;             /* its text */
    size_t tl;
    char str[4096];             /* a string token's bytes */
    size_t strl;
    uint8_t cmp;                /* T_OP */
    int depth;
};

static int dc_fail(struct dc_parse *ps, const char *what)
{
    return tdb_err(ps->err, TDB_E_INVAL, "__delete: at column %zu: %s",
                   (size_t)(ps->ts - ps->s) + 1, what);
}

/* The token at p is an operator or punctuation: ps set past it.
 * @return false when it is none. */
static bool dc_lex_op(struct dc_parse *ps, const char *p)
{
    static const struct {
        const char *t;
        enum dc_tok tok;
        uint8_t cmp;
    } ops[] = {
        {"==", T_OP, DELCOND_EQ}, {"!=", T_OP, DELCOND_NE}, {"<=", T_OP, DELCOND_LE},
        {">=", T_OP, DELCOND_GE}, {"<", T_OP, DELCOND_LT}, {">", T_OP, DELCOND_GT},
        {"(", T_LP, 0}, {")", T_RP, 0}, {"[", T_LB, 0}, {"]", T_RB, 0},
        {",", T_COMMA, 0}, {"&", T_AND, 0}, {"|", T_OR, 0},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        size_t n = strlen(ops[i].t);
        if ((size_t)(ps->end - p) >= n && !memcmp(p, ops[i].t, n)) {
            ps->tok = ops[i].tok;
            ps->cmp = ops[i].cmp;
            ps->tl = n;
            ps->p = p + n;
            return true;
        }
    }
    return false;
}

/* The string quoted at p (by ' or "), its escapes undone into ps->str. */
static int dc_lex_str(struct dc_parse *ps, const char *p)
{
    char c = *p;
    const char *q = p + 1;
    ps->strl = 0;
    while (q < ps->end && *q != c) {
        char ch = *q++;
        if (ch == '\\' && q < ps->end) {
            char e = *q++;
            ch = e == 'n' ? '\n' : e == 't' ? '\t' : e == '0' ? '\0' : e;
        }
        if (ps->strl == sizeof ps->str)
            return dc_fail(ps, "a string longer than 4096 bytes");
        ps->str[ps->strl++] = ch;
    }
    if (q == ps->end)
        return dc_fail(ps, "a string without its closing quote");
    ps->tok = T_STR;
    ps->tl = (size_t)(q + 1 - p);
    ps->p = q + 1;
    return 0;
}

/* The number at p: T_FLOAT when it has a point or (not hex) an exponent. */
static void dc_lex_num(struct dc_parse *ps, const char *p)
{
    const char *q = p + 1;
    bool flt = *p == '.';
    while (q < ps->end && (isalnum((unsigned char)*q) || *q == '.' ||
                           ((*q == '-' || *q == '+') &&
                            (q[-1] == 'e' || q[-1] == 'E')))) {
        flt |= *q == '.' || ((*q == 'e' || *q == 'E') &&
                             !(q - p > 1 && (p[1] == 'x' || p[1] == 'X')));
        q++;
    }
    ps->tok = flt ? T_FLOAT : T_INT;
    ps->tl = (size_t)(q - p);
    ps->p = q;
}

/* The name at p, or the words and, or. */
static void dc_lex_name(struct dc_parse *ps, const char *p)
{
    const char *q = p + 1;
    while (q < ps->end && (isalnum((unsigned char)*q) || *q == '_'))
        q++;
    ps->tl = (size_t)(q - p);
    ps->p = q;
    ps->tok = T_NAME;
    if (ps->tl == 3 && !memcmp(p, "and", 3))
        ps->tok = T_AND;
    else if (ps->tl == 2 && !memcmp(p, "or", 2))
        ps->tok = T_OR;
}

/* Moves to the next token. */
static int dc_next(struct dc_parse *ps)
{
    const char *p = ps->p;
    while (p < ps->end && isspace((unsigned char)*p))
        p++;
    ps->ts = p;
    ps->tl = 1;
    if (p == ps->end) {
        ps->tok = T_END;
        ps->tl = 0;
        ps->p = p;
        return 0;
    }
    char c = *p;
    if (dc_lex_op(ps, p))
        return 0;
    if (c == '\'' || c == '"')
        return dc_lex_str(ps, p);
    if (isdigit((unsigned char)c) || c == '-' || c == '+' ||
        (c == '.' && p + 1 < ps->end && isdigit((unsigned char)p[1]))) {
        dc_lex_num(ps, p);
        return 0;
    }
    if (isalpha((unsigned char)c) || c == '_') {
        dc_lex_name(ps, p);
        return 0;
    }
    ps->tok = T_BAD;
    return dc_fail(ps, "unexpected character");
}

static bool dc_is(const struct dc_parse *ps, const char *word)
{
    return ps->tok == T_NAME && ps->tl == strlen(word) &&
           !memcmp(ps->ts, word, ps->tl);
}

/* ------------------------------------------------------------- values */

/* A field of the newest schema, by name. */
struct dc_field {
    const char *name;
    bool is_dim;
    unsigned type;
    uint32_t cvn;
    bool nullable;
    bool enumerated;
};

static int dc_field(struct dc_parse *ps, const char *name, size_t len,
                    struct dc_field *f)
{
    const struct tdb_schema *s = ps->schema;
    for (uint32_t i = 0; i < s->nattrs; i++)
        if (strlen(s->attrs[i].name) == len &&
            !memcmp(s->attrs[i].name, name, len)) {
            *f = (struct dc_field){s->attrs[i].name, false, s->attrs[i].type,
                                   s->attrs[i].cell_val_num,
                                   s->attrs[i].nullable,
                                   s->attrs[i].enumeration != NULL};
            return 0;
        }
    for (uint32_t d = 0; d < s->ndims; d++)
        if (strlen(s->dims[d].name) == len &&
            !memcmp(s->dims[d].name, name, len)) {
            *f = (struct dc_field){s->dims[d].name, true, s->dims[d].type,
                                   s->dims[d].cell_val_num, false, false};
            return 0;
        }
    return tdb_err(ps->err, TDB_E_INVAL, "__delete: no attribute or "
                   "dimension '%.*s' in the array", (int)(len > 64 ? 64 : len),
                   name);
}

/* A string value for string field f. */
static int dc_string_value(struct dc_parse *ps, const struct dc_field *f,
                           struct tdb_buf *out)
{
    if (ps->tok != T_STR)
        return tdb_err(ps->err, TDB_E_INVAL, "__delete: '%s' holds "
                       "strings: compare it with a quoted string", f->name);
    if (f->cvn != TDB_VAR_NUM && ps->strl != f->cvn)
        return tdb_err(ps->err, TDB_E_INVAL, "__delete: '%s' holds %u "
                       "characters a cell", f->name, f->cvn);
    return tdb_buf_append(out, ps->str, ps->strl) ? TDB_E_NOMEM : 0;
}

/* Number text num as one value of f's type, in b[0..vs) little-endian:
 * the typed switch of the comparisons' values. */
static int dc_number(struct dc_parse *ps, const struct dc_field *f,
                     const char *num, uint8_t *b, size_t vs)
{
    unsigned t = f->type;
    char *e;
    errno = 0;
    if (tdb_dt_is_float(t)) {
        double d = strtod(num, &e);
        if (*e || errno)
            return dc_fail(ps, "not a number");
        if (t == TDB_FLOAT32) {
            float x = (float)d;
            memcpy(b, &x, 4);
        } else {
            memcpy(b, &d, 8);
        }
    } else if (ps->tok == T_FLOAT) {
        return tdb_err(ps->err, TDB_E_INVAL, "__delete: '%s' holds integers: "
                       "%s is not one", f->name, num);
    } else if (tdb_dt_is_signed_int(t)) {
        long long x = strtoll(num, &e, 0);
        if (*e || errno || x < tdb_value_int_min(t) ||
            x > (int64_t)tdb_value_int_max(t))
            return tdb_err(ps->err, TDB_E_INVAL, "__delete: %s does not fit "
                           "'%s' (%s)", num, f->name, tdb_dt_name(t));
        for (size_t i = 0; i < vs; i++)
            b[i] = (uint8_t)((uint64_t)x >> (8 * i));
    } else if (tdb_dt_is_unsigned_int(t) || t == TDB_BOOL) {
        unsigned long long x = strtoull(num, &e, 0);
        uint64_t hi = t == TDB_BOOL ? 1 : tdb_value_int_max(t);
        if (*e || errno || num[0] == '-' || x > hi)
            return tdb_err(ps->err, TDB_E_INVAL, "__delete: %s does not fit "
                           "'%s' (%s)", num, f->name, tdb_dt_name(t));
        for (size_t i = 0; i < vs; i++)
            b[i] = (uint8_t)(x >> (8 * i));
    } else {
        return tdb_err(ps->err, TDB_E_INVAL, "__delete: '%s' is of type %s, "
                       "which conditions do not compare", f->name,
                       tdb_dt_name(t));
    }
    return 0;
}

/* The value at the current token as field f stores it, appended to out. */
static int dc_value(struct dc_parse *ps, const struct dc_field *f,
                    struct tdb_buf *out)
{
    unsigned t = f->type;
    char num[128];
    if (ps->tok == T_END)
        return dc_fail(ps, "want a value at the end");
    if (ps->tok == T_NAME && dc_is(ps, "val"))
        return dc_fail(ps, "val(...) is not needed: write the value");
    if (tdb_dt_is_string(t))
        return dc_string_value(ps, f, out);
    if (f->enumerated)
        return tdb_err(ps->err, TDB_E_INVAL, "__delete: '%s' is an "
                       "enumeration: compare its index (a number)", f->name);
    if (f->cvn != 1)                    /* TDB_VAR_NUM too */
        return tdb_err(ps->err, TDB_E_INVAL, "__delete: '%s' holds several "
                       "values a cell; conditions compare one", f->name);
    size_t vs = tdb_dt_size(t);
    uint8_t b[8] = {0};
    if (t == TDB_BOOL && ps->tok == T_NAME &&
        (dc_is(ps, "True") || dc_is(ps, "False"))) {
        b[0] = dc_is(ps, "True");
        return tdb_buf_append(out, b, 1) ? TDB_E_NOMEM : 0;
    }
    if ((ps->tok != T_INT && ps->tok != T_FLOAT) || ps->tl >= sizeof num)
        return tdb_err(ps->err, TDB_E_INVAL, "__delete: '%s' holds numbers: "
                       "compare it with a number", f->name);
    memcpy(num, ps->ts, ps->tl);
    num[ps->tl] = 0;
    int r = dc_number(ps, f, num, b, vs);
    if (r)
        return r;
    return tdb_buf_append(out, b, vs) ? TDB_E_NOMEM : 0;
}

/* ------------------------------------------------------------- grammar */

static int dc_or(struct dc_parse *ps, struct dc_node **out);

/* A field reference at the current token: NAME, attr("NAME") or
 * dim("NAME"); consumed. */
static int dc_field_ref(struct dc_parse *ps, struct dc_field *f)
{
    int r;
    if (dc_is(ps, "attr") || dc_is(ps, "dim")) {
        if ((r = dc_next(ps)))
            return r;
        if (ps->tok != T_LP)
            return dc_fail(ps, "want ( after attr or dim");
        if ((r = dc_next(ps)))
            return r;
        if (ps->tok != T_STR)
            return dc_fail(ps, "want the field's name in quotes");
        char name[sizeof ps->str];
        size_t nl = ps->strl;
        memcpy(name, ps->str, nl);
        if ((r = dc_next(ps)))
            return r;
        if (ps->tok != T_RP)
            return dc_fail(ps, "want )");
        if ((r = dc_field(ps, name, nl, f)))
            return r;
        return dc_next(ps);
    }
    if (ps->tok != T_NAME)
        return dc_fail(ps, "want a field's name");
    if ((r = dc_field(ps, ps->ts, ps->tl, f)))
        return r;
    return dc_next(ps);
}

static struct dc_node *dc_leaf(const struct dc_field *f, uint8_t op)
{
    struct dc_node *n = calloc(1, sizeof *n);
    if (n && !(n->field = strdup(f->name))) {
        free(n);
        return NULL;
    }
    if (n)
        n->op = op;
    return n;
}

/* FIELD [not] in [V, ...] */
static int dc_set(struct dc_parse *ps, const struct dc_field *f, bool neg,
                  struct dc_node **out)
{
    int r = dc_next(ps);
    if (r)
        return r;
    enum dc_tok close = ps->tok == T_LB ? T_RB : T_RP;
    if (ps->tok != T_LB && ps->tok != T_LP)
        return dc_fail(ps, "want [ after in");
    struct dc_node *n = dc_leaf(f, neg ? DELCOND_NOT_IN : DELCOND_IN);
    if (!n)
        return tdb_err(ps->err, TDB_E_NOMEM, "out of memory");
    size_t cap = 0;
    if ((r = dc_next(ps)))
        goto fail;
    while (ps->tok != close) {
        if (n->noffs == cap) {
            cap = cap ? 2 * cap : 8;
            uint64_t *no = realloc(n->offs, cap * sizeof *no);
            if (!no) {
                r = tdb_err(ps->err, TDB_E_NOMEM, "out of memory");
                goto fail;
            }
            n->offs = no;
        }
        n->offs[n->noffs++] = n->data.len;
        if ((r = dc_value(ps, f, &n->data)) || (r = dc_next(ps)))
            goto fail;
        if (ps->tok != T_COMMA)
            break;
        if ((r = dc_next(ps)))
            goto fail;
    }
    if (ps->tok != close) {
        r = dc_fail(ps, "want , or the end of the list");
        goto fail;
    }
    if (!n->noffs) {
        r = dc_fail(ps, "an empty list");
        goto fail;
    }
    *out = n;
    return dc_next(ps);
fail:
    dc_free(n);
    return r;
}

/* VALUE OP FIELD, at the value: read once the field is known. */
static int dc_cmp_value_first(struct dc_parse *ps, struct dc_node **out)
{
    static const uint8_t flip[6] = {DELCOND_GT, DELCOND_GE, DELCOND_LT, DELCOND_LE, DELCOND_EQ, DELCOND_NE};
    struct dc_field f;
    struct dc_parse at = *ps;
    int r;
    if ((r = dc_next(ps)))
        return r;
    if (ps->tok != T_OP)
        return dc_fail(ps, "want a comparison (==, !=, <, <=, >, >=)");
    uint8_t op = flip[ps->cmp];
    if ((r = dc_next(ps)) || (r = dc_field_ref(ps, &f)))
        return r;
    struct dc_node *n = dc_leaf(&f, op);
    if (!n)
        return tdb_err(ps->err, TDB_E_NOMEM, "out of memory");
    struct dc_parse rest = *ps;
    *ps = at;
    r = dc_value(ps, &f, &n->data);
    *ps = rest;
    if (!r && ps->tok == T_OP)
        r = dc_fail(ps, "a chain of comparisons: join them with and");
    if (r) {
        dc_free(n);
        return r;
    }
    *out = n;
    return 0;
}

/* After FIELD: is None, is not None (*null), or an operator; *op the
 * comparison, the token after it the current one. */
static int dc_cmp_op(struct dc_parse *ps, const struct dc_field *f,
                     uint8_t *op, bool *null)
{
    int r;
    bool is = dc_is(ps, "is"), isnot = false;
    if (is) {
        if ((r = dc_next(ps)))
            return r;
        if (dc_is(ps, "not")) {
            isnot = true;
            if ((r = dc_next(ps)))
                return r;
        }
        if (!dc_is(ps, "None"))
            return dc_fail(ps, "want None after is");
    } else if (ps->tok != T_OP) {
        return dc_fail(ps, "want a comparison (==, !=, <, <=, >, >=, in, "
                       "is None)");
    }
    *op = is ? (isnot ? DELCOND_NE : DELCOND_EQ) : ps->cmp;
    if (!is && (r = dc_next(ps)))
        return r;
    *null = is || dc_is(ps, "None");
    if (*null && *op != DELCOND_EQ && *op != DELCOND_NE)
        return dc_fail(ps, "None is only tested with ==, !=, is, is not");
    if (*null && !f->nullable)
        return tdb_err(ps->err, TDB_E_INVAL, "__delete: '%s' is not "
                       "nullable: no cell of it is None", f->name);
    return 0;
}

/* A comparison: FIELD OP VALUE, VALUE OP FIELD, FIELD [not] in LIST,
 * FIELD is [not] None. */
static int dc_cmp(struct dc_parse *ps, struct dc_node **out)
{
    struct dc_field f;
    int r;
    if (ps->tok == T_INT || ps->tok == T_FLOAT || ps->tok == T_STR ||
        dc_is(ps, "True") || dc_is(ps, "False"))
        return dc_cmp_value_first(ps, out);
    if ((r = dc_field_ref(ps, &f)))
        return r;
    if (dc_is(ps, "in"))
        return dc_set(ps, &f, false, out);
    if (dc_is(ps, "not")) {
        if ((r = dc_next(ps)))
            return r;
        if (!dc_is(ps, "in"))
            return dc_fail(ps, "want in after not");
        return dc_set(ps, &f, true, out);
    }
    uint8_t op = 0;
    bool null = false;
    if ((r = dc_cmp_op(ps, &f, &op, &null)))
        return r;
    struct dc_node *n = dc_leaf(&f, op);
    if (!n)
        return tdb_err(ps->err, TDB_E_NOMEM, "out of memory");
    if (!null && (r = dc_value(ps, &f, &n->data))) {
        dc_free(n);
        return r;
    }
    if ((r = dc_next(ps))) {
        dc_free(n);
        return r;
    }
    if (ps->tok == T_OP) {
        dc_free(n);
        return dc_fail(ps, "a chain of comparisons: join them with and");
    }
    *out = n;
    return 0;
}

static int dc_unary(struct dc_parse *ps, struct dc_node **out)
{
    int r;
    if (++ps->depth > DC_MAX_DEPTH)
        return dc_fail(ps, "nested too deep");
    if (dc_is(ps, "not")) {
        if ((r = dc_next(ps)) || (r = dc_unary(ps, out)))
            return r;
        dc_negate(*out);
    } else if (ps->tok == T_LP) {
        if ((r = dc_next(ps)) || (r = dc_or(ps, out)))
            return r;
        if (ps->tok != T_RP) {
            dc_free(*out);
            *out = NULL;
            return dc_fail(ps, "want )");
        }
        if ((r = dc_next(ps))) {
            dc_free(*out);
            *out = NULL;
            return r;
        }
    } else if ((r = dc_cmp(ps, out))) {
        return r;
    }
    ps->depth--;
    return 0;
}

static int dc_chain(struct dc_parse *ps, struct dc_node **out, enum dc_tok t,
                    uint8_t op, int (*sub)(struct dc_parse *,
                                           struct dc_node **))
{
    struct dc_node *l = NULL, *rn = NULL;
    int r = sub(ps, &l);
    while (!r && ps->tok == t) {
        if ((r = dc_next(ps)) || (r = sub(ps, &rn)))
            break;
        struct dc_node *c = dc_combine(l, rn, op);
        if (!c) {
            dc_free(rn);
            r = tdb_err(ps->err, TDB_E_NOMEM, "out of memory");
            break;
        }
        l = c;
        rn = NULL;
    }
    if (r) {
        dc_free(l);
        return r;
    }
    *out = l;
    return 0;
}

static int dc_and(struct dc_parse *ps, struct dc_node **out)
{
    return dc_chain(ps, out, T_AND, DELCOND_AND, dc_unary);
}

static int dc_or(struct dc_parse *ps, struct dc_node **out)
{
    return dc_chain(ps, out, T_OR, DELCOND_OR, dc_and);
}

/* ------------------------------------------------------------ output */

static int dc_serialize(const struct dc_node *n, struct tdb_buf *b)
{
    int r = tdb_buf_put_u8(b, n->expr ? DELCOND_EXPR : DELCOND_VALUE);
    if (!r)
        r = tdb_buf_put_u8(b, n->op);
    if (n->expr) {
        if (!r)
            r = tdb_buf_put_u64(b, n->nkids);
        for (size_t i = 0; i < n->nkids && !r; i++)
            r = dc_serialize(n->kids[i], b);
        return r;
    }
    uint32_t fl = (uint32_t)strlen(n->field);
    if (!r)
        r = tdb_buf_put_u32(b, fl);
    if (!r)
        r = tdb_buf_append(b, n->field, fl);
    if (!r)
        r = tdb_buf_put_u64(b, n->data.len);
    if (!r && n->data.len)
        r = tdb_buf_append(b, n->data.data, n->data.len);
    if (!r && (n->op == DELCOND_IN || n->op == DELCOND_NOT_IN)) {
        r = tdb_buf_put_u64(b, 8 * (uint64_t)n->noffs);
        for (size_t i = 0; i < n->noffs && !r; i++)
            r = tdb_buf_put_u64(b, n->offs[i]);
    }
    return r;
}

int tdb_delete_condition(const struct tdb_schema *s, const char *text,
                         size_t len, struct tdb_buf *out,
                         struct tdb_error *err)
{
    if (len > DC_MAX_TEXT)
        return tdb_err(err, TDB_E_INVAL, "__delete: %zu bytes, more than "
                       "%u", len, DC_MAX_TEXT);
    if (memchr(text, 0, len))
        return tdb_err(err, TDB_E_INVAL, "__delete: a NUL byte: want a "
                       "condition in text");
    struct dc_parse ps = {.s = text, .end = text + len, .p = text,
                          .schema = s, .err = err};
    struct dc_node *root = NULL;
    int r = dc_next(&ps);
    if (!r && ps.tok == T_END)
        return tdb_err(err, TDB_E_INVAL, "__delete: empty: want a condition "
                       "such as a < 0 and b == 'x'");
    if (!r)
        r = dc_or(&ps, &root);
    if (!r && ps.tok != T_END)
        r = dc_fail(&ps, "unexpected text after the condition");
    if (!r) {
        dc_negate(root);
        if (dc_serialize(root, out))
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    dc_free(root);
    return r;
}

/* Whether cells can be deleted from the array of newest schema s, given
 * key (NULL: none). */
static int dc_deletable(const struct tdb_schema *s, const uint8_t *key,
                        struct tdb_error *err)
{
    if (s->array_type != TDB_SPARSE)
        return tdb_err(err, TDB_E_INVAL, "__delete: cells are deleted from "
                       "sparse arrays only (as in TileDB 2.29)");
    if (s->version < 16)
        return tdb_err(err, TDB_E_UNSUPPORTED, "deletes need format 16 or "
                       "later (the array's is %u)", s->version);
    if (s->encryption == TDB_AES_256_GCM && !key)
        return tdb_err(err, TDB_E_NOKEY, "the array is encrypted: a key is "
                       "needed");
    return 0;
}

/* The delete's time: given (timestamp_ms), as it is; else now, after
 * every commit of dir (as a fragment's). */
static uint64_t dc_time(const struct tdb_arraydir *dir, uint64_t timestamp_ms)
{
    if (timestamp_ms)
        return timestamp_ms;
    uint64_t t = tdb_now_ms();
    for (size_t i = 0; i < dir->ncands; i++)
        if (dir->cands[i].ts.t2 >= t && dir->cands[i].ts.t2 < UINT64_MAX)
            t = dir->cands[i].ts.t2 + 1;
    for (size_t i = 0; i < dir->ndeletes; i++)
        if (dir->deletes[i].ts.t2 >= t && dir->deletes[i].ts.t2 < UINT64_MAX)
            t = dir->deletes[i].ts.t2 + 1;
    return t;
}

/* Publishes file as __commits/__t_t_<uuid>_V.del, V the version of a
 * write into the array of newest schema s; *name its name. */
static int dc_publish(const struct tdb_io *io, const struct tdb_schema *s,
                      uint64_t t, const struct tdb_buf *file, char **name,
                      struct tdb_error *err)
{
    uint8_t rnd[16];
    char nm[96], path[128], tmp[140];
    int r = tdb_random(rnd, sizeof rnd, err);
    if (r)
        return r;
    tdb_tsname_make(nm, sizeof nm, t, t, rnd, tdb_schema_fragment_version(s));
    snprintf(path, sizeof path, "__commits/%s.del", nm);
    /* (a name tiledbfs-consolidate's sweep removes after a kill) */
    snprintf(tmp, sizeof tmp, ".%s.del.cons.tmp", nm);
    if (io->ops->mkdir && (r = io->ops->mkdir(io->ctx, "__commits")))
        return tdb_err(err, r, "__commits: cannot create: %s",
                       tdb_strerror(r));
    if ((r = tdb_io_publish(io, tmp, path, file->data, file->len, err)))
        return r;
    if (!(*name = strdup(nm)))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    return 0;
}

int tdb_delete_commit(const struct tdb_io *io, const char *text, size_t len,
                      const struct tdb_commit_options *at, char **name,
                      struct tdb_error *err)
{
    *name = NULL;
    struct tdb_arraydir *dir = NULL;
    struct tdb_schema_set schemas = {0};
    const struct tdb_schema *s = NULL;
    struct tdb_buf cond = {0}, file = {0};
    int r = tdb_arraydir_load(io, 0, UINT64_MAX, &dir, err);
    if (!r)
        r = tdb_array_schemas_load(io, dir, at->key, &schemas, &s, err);
    if (!r)
        r = dc_deletable(s, at->key, err);
    bool enc = !r && s->encryption == TDB_AES_256_GCM;
    if (!r)
        r = tdb_delete_condition(s, text, len, &cond, err);
    if (!r)
        r = tdb_write_generic_tile(&cond, enc ? at->key : NULL, &file, err);
    if (!r)
        r = dc_publish(io, s, dc_time(dir, at->timestamp_ms), &file, name,
                       err);
    tdb_buf_free(&cond);
    tdb_buf_free(&file);
    for (size_t i = 0; i < schemas.n; i++)
        tdb_schema_free(schemas.v[i]);
    free(schemas.v);
    tdb_arraydir_free(dir);
    return r;
}
