/* delcond.h: delete commits (format_spec/delete_commit_file.md): the
 * serialised query condition and its evaluation on one cell. */
#ifndef TDB_DELCOND_H
#define TDB_DELCOND_H

#include "core/core.h"

/* The serialised tree's numbers (delete_commit_file.md): a node's kind,
 * an expression's combination, a value node's comparison. */
enum { DELCOND_EXPR = 0, DELCOND_VALUE = 1 };
enum { DELCOND_AND = 0, DELCOND_OR = 1, DELCOND_NOT = 2 };
enum {
    DELCOND_LT = 0, DELCOND_LE = 1, DELCOND_GT = 2, DELCOND_GE = 3,
    DELCOND_EQ = 4, DELCOND_NE = 5, DELCOND_IN = 6, DELCOND_NOT_IN = 7,
    DELCOND_ALWAYS_TRUE = 253, DELCOND_ALWAYS_FALSE = 254
};

struct tdb_cond;

/* Parses a .del file's decoded payload. */
int tdb_cond_parse(const uint8_t *p, size_t size, const char *what,
                   struct tdb_cond **out, struct tdb_error *err);

/* Reads and parses a delete commit file (a generic tile). */
int tdb_cond_load(const struct tdb_io *io, const char *path,
                  const uint8_t *key, struct tdb_cond **out,
                  struct tdb_error *err);

void tdb_cond_free(struct tdb_cond *c);

/* Reads the condition stored at byte `off` of `path` (a generic tile; a
 * consolidated commits file holds delete conditions at offsets). */
int tdb_cond_load_at(const struct tdb_io *io, const char *path, uint64_t off,
                     const uint8_t *key, struct tdb_cond **out,
                     struct tdb_error *err);

/* How the evaluator sees one cell: for field `name`, its value bytes
 * (all cell_val_num values, or the var-sized value), its datatype, and
 * whether it is null.  @return 0, or TDB_E_NOENT for an unknown field, or
 * 1 when the field does not exist in the cell's fragment (added by schema
 * evolution): the test on it is then false, as in TileDB.
 * is_var (optional) tells whether a field is var-sized; it matters only
 * for CHAR fields (fixed CHAR compares the first character as a signed
 * char, var CHAR compares strings); NULL means var-sized.
 * release (optional) is called after each test, once its value is no
 * longer used: values returned by get so far may then be let go. */
struct tdb_cell_view {
    int (*get)(void *arg, const char *name, const uint8_t **val,
               uint64_t *size, unsigned *type, bool *is_null);
    void *arg;
    bool (*is_var)(void *arg, const char *name);
    void (*release)(void *arg);
};

/* TileDB stores the negation of the user's delete condition (the cells to
 * keep); the evaluator applies the stored tree and negates the result.
 * Semantics (TileDB's query_condition.cc): a null cell fails every
 * comparison with a value (NE too) and every set test; a value-less EQ /
 * NE on a non-string field tests validity, on a string compares with "";
 * strings compare byte-wise, a prefix first; fixed CHAR compares its first
 * character as a signed char; NaN fails all but NE.  AND / OR take two
 * children or more, NOT exactly one (TileDB itself never writes NOT).
 * A cell is removed only if it is also no newer than the delete commit
 * (cell timestamp <= the .del file's t1): that test is the caller's.
 * @return 1 when the cell matches (is deleted), 0 when not, <0 on error. */
int tdb_cond_eval(const struct tdb_cond *c, const struct tdb_cell_view *cell,
                  struct tdb_error *err);

/* Field names the condition reads (for callers that prefetch). */
size_t tdb_cond_fields(const struct tdb_cond *c, const char ***names);

#endif
