/* test_order.c: the integer order keys of the global order
 * (format/model/order.c): a key never contradicts tdb_order_cmp, on
 * random coordinates of row-major, col-major and Hilbert orders, inside
 * and outside the domain. */
#include "model/order.h"
#include "model/schema.h"
#include "../support.h"
#include "../rng.h"

#include <stdlib.h>

/* ------------------------------------------------------------ helpers */

static struct tdb_schema *schema_of(const char *json)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    int r = tdb_schema_from_json(json, strlen(json), &s, &err);
    if (r)
        fprintf(stderr, "  schema: %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    return s;
}

#define ATTR_V "\"attrs\": [{\"name\": \"v\", \"datatype\": \"INT64\"}]"

/* ---------------------------------------------------------------- keys */

/* The key never contradicts tdb_order_cmp: a < b by key means a < b; with
 * an exact key equal keys mean equal coordinates. */
static void check_keys(const char *json, int64_t lo, uint64_t span, bool outside)
{
    struct tdb_schema *s = schema_of(json);
    if (!s)
        return;
    struct tdb_order_key k;
    tdb_order_key_init(&k, s);
    unsigned bad = 0, keyed = 0;
    for (int i = 0; i < 200000; i++) {
        uint8_t a[TDB_MAX_DIMS][8], b[TDB_MAX_DIMS][8];
        struct tdb_coords ca, cb;
        for (uint32_t d = 0; d < s->ndims; d++) {
            unsigned n = tdb_dt_size(s->dims[d].type);
            uint64_t span2 = outside ? span + 8 : span;
            int64_t base = outside ? lo - 4 : lo;
            /* near values half the time: equal keys, ties */
            uint64_t va = rnd_below(span2), vb = rnd_below(4) ? va + rnd_below(3)
                                                              : rnd_below(span2);
            tdb_st64(a[d], (uint64_t)(base + (int64_t)va));
            tdb_st64(b[d], (uint64_t)(base + (int64_t)vb));
            ca.v[d] = a[d];
            cb.v[d] = b[d];
            ca.n[d] = cb.n[d] = n;
        }
        uint64_t ha = tdb_hilbert(s, &ca), hb = tdb_hilbert(s, &cb);
        int c = tdb_order_cmp(s, &ca, ha, &cb, hb);
        uint64_t ka, kb;
        bool va = tdb_order_key_of(&k, &ca, ha, &ka);
        bool vb = tdb_order_key_of(&k, &cb, hb, &kb);
        if (!va || !vb)
            continue;
        keyed++;
        if ((ka < kb && c >= 0) || (ka > kb && c <= 0) ||
            (k.exact && ka == kb && c != 0))
            bad++;
    }
    if (bad)
        fprintf(stderr, "  %u of %u keys contradict the order: %s\n", bad,
                keyed, json);
    CHECK_EQ_INT(bad, 0);
    CHECK(keyed > 1000);
    tdb_schema_free(s);
}

static void test_keys(void)
{
    rng_state = 99;
    check_keys("{\"array_type\": \"sparse\", \"dims\": ["
               "{\"name\": \"a\", \"datatype\": \"INT64\", \"domain\": [-50, 49], \"tile_extent\": 7},"
               "{\"name\": \"b\", \"datatype\": \"INT64\", \"domain\": [-50, 49], \"tile_extent\": 9}], "
               ATTR_V "}", -50, 100, true);
    check_keys("{\"array_type\": \"sparse\", \"tile_order\": \"col-major\", "
               "\"cell_order\": \"row-major\", \"dims\": ["
               "{\"name\": \"a\", \"datatype\": \"INT8\", \"domain\": [-100, 100], \"tile_extent\": 30},"
               "{\"name\": \"b\", \"datatype\": \"INT8\", \"domain\": [-100, 100], \"tile_extent\": 11},"
               "{\"name\": \"c\", \"datatype\": \"INT8\", \"domain\": [-100, 100]}], "
               ATTR_V "}", -100, 201, false);
    check_keys("{\"array_type\": \"sparse\", \"cell_order\": \"hilbert\", \"dims\": ["
               "{\"name\": \"a\", \"datatype\": \"INT64\", \"domain\": [0, 1000]},"
               "{\"name\": \"b\", \"datatype\": \"INT64\", \"domain\": [0, 1000]}], "
               ATTR_V "}", 0, 1001, false);
    /* a key cut short: three wide dimensions */
    check_keys("{\"array_type\": \"sparse\", \"dims\": ["
               "{\"name\": \"a\", \"datatype\": \"INT64\", \"domain\": [0, 4000000000], \"tile_extent\": 1000},"
               "{\"name\": \"b\", \"datatype\": \"INT64\", \"domain\": [0, 4000000000], \"tile_extent\": 1000},"
               "{\"name\": \"c\", \"datatype\": \"INT64\", \"domain\": [0, 4000000000], \"tile_extent\": 1000}], "
               ATTR_V "}", 0, 4000000001ull, true);
    /* exact and not: a small domain is exact, a wide one is not */
    struct tdb_schema *s = schema_of(
        "{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"a\", \"datatype\": "
        "\"UINT16\", \"domain\": [0, 65279], \"tile_extent\": 256}], " ATTR_V "}");
    struct tdb_order_key k;
    if (s) {
        tdb_order_key_init(&k, s);
        CHECK(k.exact);
        CHECK_EQ_INT(k.nparts, 2);
        tdb_schema_free(s);
    }
    s = schema_of("{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"a\", \"datatype\": "
                  "\"INT64\", \"domain\": [-9223372036854775807, 9223372036854775000], "
                  "\"tile_extent\": 16}], " ATTR_V "}");
    if (s) {
        tdb_order_key_init(&k, s);
        CHECK(!k.exact);
        tdb_schema_free(s);
    }
}

int main(void)
{
    RUN(test_keys);
    return unit_done();
}
