/* schema_json_priv.h: what the files of the schema JSON reader share
 * (schema_json.c the document and its entry point, schema_json_values.c
 * its places, errors and scalar values, schema_json_filters.c filter
 * pipelines, schema_json_fields.c dimensions, attributes and the current
 * domain, schema_json_check.c TileDB's checks of a new schema,
 * schema_json_evolve.c evolution's JSON). */
#ifndef TDB_SCHEMA_JSON_PRIV_H
#define TDB_SCHEMA_JSON_PRIV_H

#include "write/writer.h"

#include <jansson.h>

/* TileDB's defaults for what a schema JSON may leave out. */
#define SJ_CHUNK 65536          /* pipeline max chunk size */
#define SJ_CAPACITY 10000
#define SJ_MAX_CELL_VALS (UINT32_C(1) << 24)
#define SJ_MAX_FILTERS 64
#define SJ_HILBERT_MAX_DIMS 16

/* Where in the document a value sits, for messages ("dims[1].domain"). */
struct sj_where {
    char s[160];
};

/* ---------------------------------------------- schema_json_values.c */

/* *w: parent's place followed by the printf-formatted tail. */
void sj_at(struct sj_where *w, const struct sj_where *parent,
           const char *fmt, ...) TDB_PRINTF(3, 4);

/* Error `code` with the message "schema JSON: <place>: <formatted>". */
int sj_bad(struct tdb_error *err, int code, const struct sj_where *w,
           const char *fmt, ...) TDB_PRINTF(4, 5);

int sj_nomem(struct tdb_error *err);
int sj_known_keys(json_t *obj, const char *const *known,
                  const struct sj_where *w, struct tdb_error *err);

/* text with the integer literals jansson cannot hold in quotes, in *out
 * (to free).  @return 0 or TDB_E_NOMEM. */
int sj_quote_big(const char *text, size_t len, char **out, size_t *out_len);

int sj_int(json_t *v, const struct sj_where *w, bool *neg, uint64_t *mag,
           struct tdb_error *err);
int sj_uint(json_t *v, const struct sj_where *w, uint64_t max,
            uint64_t *out, struct tdb_error *err);
int sj_double(json_t *v, const struct sj_where *w, double *out,
              struct tdb_error *err);
int sj_value(json_t *v, unsigned type, const struct sj_where *w,
             uint8_t out[8], struct tdb_error *err);
int sj_str(json_t *obj, const char *key, bool required,
           const struct sj_where *parent, const char **out,
           struct tdb_error *err);
int sj_bool(json_t *obj, const char *key, bool def,
            const struct sj_where *parent, bool *out, struct tdb_error *err);
int sj_type_name(const char *name, const struct sj_where *w, unsigned *out,
                 struct tdb_error *err);
int sj_datatype(json_t *obj, const struct sj_where *parent, unsigned *out,
                struct tdb_error *err);

/* --------------------------------------------- schema_json_filters.c */

int sj_pipeline(json_t *obj, const char *key, const struct sj_where *parent,
                const struct tdb_filter *def, struct tdb_pipeline *p,
                struct tdb_error *err);
int sj_named(json_t *o, const struct sj_where *w, const char *const *known,
             char **name, unsigned *type, struct tdb_error *err);

/* ---------------------------------------------- schema_json_fields.c */

int sj_dim(json_t *o, const struct sj_where *w, struct tdb_dim *d,
           const struct tdb_pipeline *coords, struct tdb_error *err);
int sj_attr(json_t *o, const struct sj_where *w, struct tdb_attr *a,
            struct tdb_error *err);
int sj_current_domain(json_t *cd, const struct sj_where *w,
                      struct tdb_schema *s, struct tdb_error *err);
int sj_enum_path(struct tdb_enumeration *en, struct tdb_error *err);
int sj_enum_values(json_t *e, const struct sj_where *ew,
                   struct tdb_enumeration *en, struct tdb_error *err);
int sj_enumeration(json_t *e, const struct sj_where *ew,
                   struct tdb_enumeration *en, struct tdb_error *err);
int sj_enumerations(json_t *o, const struct sj_where *w,
                    struct tdb_schema *s, struct tdb_error *err);


/* ----------------------------------------------- schema_json_check.c */

int sj_fill_extents(struct tdb_schema *s, struct tdb_error *err);
void sj_webp_extents(struct tdb_schema *s);

#endif
