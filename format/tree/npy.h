/* npy.h: numpy's files of the mount contract (docs/LAYOUT.md "numpy's
 * files"): NAME.npy, a .npy header (format 1.0) and then the bytes of a
 * field file, or var-sized strings each padded to the longest; and the
 * files of __slice/ and __domain/, made from a name that indexes a dense
 * view as numpy indexes an array (by view offsets, or by the domain's
 * coordinates). */
#ifndef TDB_NPY_H
#define TDB_NPY_H

#include "read/view.h"

/* The longest var-sized string (bytes) a .npy pads every value to; a
 * field with a longer value has NAME.npy, but its stat and reads fail
 * with TDB_E_UNSUPPORTED saying so. */
#define TDB_NPY_MAX_WIDTH 65536

struct tdb_npy;

/* What a .npy shows: ff (values or validity), and for var-sized strings
 * their offsets file offs (else NULL).  nd 0: one axis, the cells of ff's
 * view, counted at first use (a sparse merge); else the shape dims[0..nd).
 * own: ff, offs and their cells belong to the .npy (freed with it).
 * like: var-sized strings take the width of this .npy's (the whole
 * field's; NULL: their own). */
struct tdb_npy_src {
    struct tdb_fieldfile *ff, *offs;
    uint32_t nd;
    const uint64_t *dims;
    bool own;
    struct tdb_npy *like;
};

/* Whether ff can have a .npy: fixed-size values or validity, or
 * var-sized values of a one-byte string type (CHAR, STRING_ASCII,
 * STRING_UTF8; their offsets file is then needed). */
bool tdb_npy_fits(const struct tdb_fieldfile *ff);

/* A new .npy (nothing decoded).  @return 0 or TDB_E_NOMEM. */
int tdb_npy_new(struct tdb_npy **out, const struct tdb_npy_src *src,
                struct tdb_error *err);
void tdb_npy_free(struct tdb_npy *n);

/* The size of the file; the first call counts the cells (sparse) or
 * finds the longest string (one pass over the offsets). */
int tdb_npy_size(struct tdb_npy *n, uint64_t *size, struct tdb_error *err);
int tdb_npy_read(struct tdb_npy *n, uint64_t off, void *buf, size_t len,
                 size_t *got, struct tdb_error *err);
/* SEEK_DATA / SEEK_HOLE as tdb_fieldfile_seek, the header being data. */
int tdb_npy_seek(struct tdb_npy *n, uint64_t off, bool data, uint64_t *out,
                 struct tdb_error *err);
/* The field file whose bytes follow the header one for one (NULL for
 * strings, or before the first tdb_npy_size), and the header's length. */
struct tdb_fieldfile *tdb_npy_fieldfile(struct tdb_npy *n, uint64_t *head);
/* The shape the header gives ("23,17"), once sized; NULL before. */
const char *tdb_npy_shape(struct tdb_npy *n);

/* Splits a __slice/ or __domain/ name "FIELD[...].npy": *field_len is the
 * length of FIELD (the name of a NAME.npy without ".npy").  @return
 * false when the name has no such form. */
bool tdb_npy_split(const char *name, size_t *field_len);

/* The .npy of __slice/FIELD[...].npy (coords false) or
 * __domain/FIELD[...].npy (coords true), `index` being the part from
 * '[' on, over `base`, the FIELD.npy of a dense view.  The index holds one item
 * per dimension or fewer (the rest whole), each an integer i (that index
 * alone; its axis dropped) or start:stop or start:stop:step, any part
 * left out.  __slice counts view offsets as numpy does (negative from the
 * end, out-of-range bounds clipped, an integer out of range refused);
 * __domain takes the dimensions' coordinates (negative numbers are
 * coordinates; bounds clipped to the view).  @return 0, TDB_E_NOENT with
 * err saying what is wrong with the name, or another error. */
int tdb_npy_slice(struct tdb_npy **out, struct tdb_npy *base,
                  const char *index, bool coords, struct tdb_error *err);

#endif
