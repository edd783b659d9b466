/* options.h: a filter's options as a table (format_spec/filter_pipeline.md,
 * the options of each filter; the "filters" lists of __array.json).
 *
 * Each filter keeps its options in a struct of its own file, stored in
 * place in struct tdb_filter (its `options` bytes), and describes that
 * struct's fields in a table of struct tdb_filter_opt reachable from its
 * ops (options, n_options).  The schema JSON reader and the __array.json
 * printer walk that table with one loop each, whatever the filter; the
 * functions here read and write one field of the table.
 */
#ifndef TDB_FILTER_OPTIONS_H
#define TDB_FILTER_OPTIONS_H

#include "filter.h"

/* What a field holds, and how the JSON spells it. */
enum tdb_fopt_kind {
    TDB_FOPT_INT,       /* a signed integer of `width` bytes; JSON integer,
                         * at most `max` in magnitude */
    TDB_FOPT_UINT,      /* an unsigned integer of `width` bytes; JSON
                         * integer from 0 to `max` */
    TDB_FOPT_REAL,      /* a float (width 4) or double (8); JSON number */
    TDB_FOPT_BOOL,      /* a uint8 0 or 1; JSON true or false */
    TDB_FOPT_DATATYPE,  /* a uint8 datatype, TDB_ANY for none; JSON the
                         * datatype's name, printed unless TDB_ANY */
    TDB_FOPT_NAME       /* a uint8 index into names; JSON one of names[1..],
                         * any case; names[0] names the unset value and
                         * values past the list */
};

/* Flags of a field. */
#define TDB_FOPT_NO_JSON 1u     /* options bytes only, never in JSON */
#define TDB_FOPT_REQUIRED 2u    /* the JSON must give it */
#define TDB_FOPT_NULL_OK 4u     /* a JSON null leaves the default */

/* A value of a field: i for the integer kinds, d for TDB_FOPT_REAL. */
struct tdb_fopt_value {
    int64_t i;
    double d;
};

/* One field of a filter's options struct. */
struct tdb_filter_opt {
    const char *name;       /* the JSON key */
    uint8_t kind;           /* enum tdb_fopt_kind */
    uint8_t width;          /* bytes of the field */
    uint8_t flags;          /* TDB_FOPT_* */
    uint16_t offset;        /* offsetof the field in the options struct */
    uint64_t max;           /* TDB_FOPT_INT, TDB_FOPT_UINT: the bound */
    const char *const *names;   /* TDB_FOPT_NAME: n_names names */
    uint8_t n_names;
    /* Optional: 0 when v is a value TileDB takes for the field, else
     * nonzero with why (cap bytes) saying what is wrong. */
    int (*check)(const struct tdb_fopt_value *v, char *why, size_t cap);
};

/* The table of a filter's options is the one of the ops of its type,
 * tdb_filter_lookup(f->type): a compressor whose options say "no
 * compression" runs as NONE but keeps (and shows) its options. */

/* The field `name` of filter ops's options; NULL when it has none. */
const struct tdb_filter_opt *tdb_filter_opt_find(
    const struct tdb_filter_ops *ops, const char *name);

/* The value of field o of filter f (o from the table of f's type). */
struct tdb_fopt_value tdb_fopt_get(const struct tdb_filter *f,
                                   const struct tdb_filter_opt *o);

/* Stores v in field o of filter f, narrowed to the field's width (a REAL
 * of width 4 to float).  The caller checks v first (tdb_fopt_check). */
void tdb_fopt_set(struct tdb_filter *f, const struct tdb_filter_opt *o,
                  const struct tdb_fopt_value *v);

/* o's own check of v (struct tdb_filter_opt's check); 0 for a field
 * without one. */
int tdb_fopt_check(const struct tdb_filter_opt *o,
                   const struct tdb_fopt_value *v, char *why, size_t cap);

/* The name a TDB_FOPT_NAME field shows for value i: names[i], or
 * names[0] for a value past the list. */
const char *tdb_fopt_name(const struct tdb_filter_opt *o, int64_t i);

/* By name: the integer or real value of f's option `name` (0 when f has
 * no such option), and setting it.  The setters store without checking
 * and @return 0, or TDB_E_INVAL when f has no such option. */
int64_t tdb_filter_get_int(const struct tdb_filter *f, const char *name);
double tdb_filter_get_real(const struct tdb_filter *f, const char *name);
int tdb_filter_set_int(struct tdb_filter *f, const char *name, int64_t v);
int tdb_filter_set_real(struct tdb_filter *f, const char *name, double v);

#endif
