"""test_zarrita.py: MOUNT/__zarr read by zarrita (npm, tests/zarrita), a
Zarr reader independent of zarr-python, in Zarr v2 and in Zarr v3: every
field of every dense corpus case (fixed-size attributes, var-sized
strings and bytes, validity, enumeration labels, the dimensions'
coordinates) against the case's expected bytes, and a group's __zarr with
each member.  One node process reads a whole store (tests/zarrita/read.mjs
prints what zarrita returns as JSON lines).

What zarrita 0.7.5 cannot read (LIMITS below, each found in its source)
is asserted to fail the way its source says, and said on the console as a
warning; should a later zarrita read it, the test fails until LIMITS
drops it."""
import json
import os
import shutil
import subprocess
import warnings

import numpy
import pytest

from conftest import REPO, case_options, get_case

ZARRITA = os.path.join(REPO, 'tests', 'zarrita')
READ = os.path.join(ZARRITA, 'read.mjs')
NOT_INSTALLED = 'zarrita is not installed: scripts/install-deps installs it'
READ_TIMEOUT = 120    # seconds for one read.mjs run (one whole store)

# zarrita's names of numpy's dtypes (v2 dtypes become these; v3 data_type
# names are the same)
ZDTYPE = {'i1': 'int8', 'u1': 'uint8', 'i2': 'int16', 'u2': 'uint16',
          'i4': 'int32', 'u4': 'uint32', 'i8': 'int64', 'u8': 'uint64',
          'f4': 'float32', 'f8': 'float64', 'b1': 'bool'}
# numpy's dtype of a TileDB number type (dimensions, enumerations, metadata)
TDB_NUMPY = {'INT8': '<i1', 'UINT8': '<u1', 'INT16': '<i2', 'UINT16': '<u2',
             'INT32': '<i4', 'UINT32': '<u4', 'INT64': '<i8', 'UINT64': '<u8',
             'FLOAT32': '<f4', 'FLOAT64': '<f8', 'BOOL': '|b1'}
STRINGS = ('STRING_ASCII', 'STRING_UTF8')
BYTE_TYPES = ('CHAR',) + STRINGS
# CF's words for TileDB's time units (the "units" of DATETIME_*, TIME_*)
UNITS = {'Y': 'years', 'M': 'months', 'W': 'weeks', 'D': 'days', 'H': 'hours',
         'MIN': 'minutes', 'S': 'seconds', 'MS': 'milliseconds',
         'US': 'microseconds', 'NS': 'nanoseconds', 'PS': 'picoseconds',
         'FS': 'femtoseconds', 'AS': 'attoseconds'}

# (version, kind of field) -> the error zarrita 0.7.5 gives, from its source:
# v2 datetimes: src/util.ts coerceDtype maps "<" or "|" and a numpy code
# of b1, i1..u8, f2..f8, S*, U* and throws on any other (M8[..], m8[..]);
# vlen-bytes: src/codecs.ts createDefaultRegistry registers vlen-utf8 (and
# numcodecs.vlen-utf8) but neither vlen-bytes nor numcodecs.vlen-bytes, so
# the v2 chunk decode (loadCodecs) throws; v3 fails before, at the open:
# src/util.ts getCtr knows no data_type "bytes" (only the numbers, bool,
# "string", v2:S/U/object), called by createContext in src/hierarchy.ts.
LIMITS = {
    (2, 'datetime'): 'InvalidMetadataError: Unsupported or unknown dtype: <',
    (2, 'vlen-bytes'): 'UnknownCodecError: Unknown codec: numcodecs.vlen-bytes',
    (3, 'vlen-bytes'): 'InvalidMetadataError: Unknown or unsupported dataType: bytes',
}
META_KEYS = ('dtype', 'shape', 'chunks', 'dimension_names', 'attrs', 'fill_value')


class ZarritaLimit(UserWarning):
    """A field zarrita 0.7.5 cannot read (LIMITS), said on the console."""


def zarrita_missing():
    """Why zarrita cannot run here, or None."""
    if shutil.which('node') is None:
        return f'node is not installed, so {NOT_INSTALLED}'
    for pkg in ('zarrita', os.path.join('@zarrita', 'storage')):
        if not os.path.isfile(os.path.join(ZARRITA, 'node_modules', pkg, 'package.json')):
            return f'{NOT_INSTALLED} (no tests/zarrita/node_modules/{pkg})'
    return None


@pytest.fixture
def zarrita():
    """read(store, version) -> (groups, arrays): read.mjs's lines, groups
    by path and arrays by name; skips when zarrita is not installed."""
    why = zarrita_missing()
    if why:
        pytest.skip(why)

    def read(store, version, names=()):
        r = subprocess.run(['node', READ, store, str(version)] + list(names),
                           capture_output=True, timeout=READ_TIMEOUT)
        err = r.stderr.decode(errors='replace').strip()
        assert r.returncode == 0, f'zarrita v{version} cannot open {store}: {err}'
        groups, arrays = {}, {}
        for line in r.stdout.decode().splitlines():
            doc = json.loads(line)
            if 'group' in doc:
                groups[doc['group']] = doc
            else:
                arrays[doc['name']] = doc
        return groups, arrays
    return read


# ------------------------------------------------------------ expectations

def tdb_units(datatype):
    """CF's units of a DATETIME_* or TIME_* attribute."""
    kind, unit = datatype.split('_', 1)
    return UNITS[unit] + (' since 1970-01-01' if kind == 'DATETIME' else '')


def field_kind(f):
    """Which row of the contract's table a field is."""
    dt, cvn = f['datatype'], f['cell_val_num']
    if cvn == 'var':
        return 'vlen-utf8' if dt in STRINGS else 'vlen-bytes'
    if dt in BYTE_TYPES:
        return 'fixed-bytes'
    if dt.startswith('DATETIME_') or dt.startswith('TIME_'):
        return 'datetime'
    return 'number'


def var_items(raw, offsets):
    """The cells of a var-sized data file and its .offsets."""
    offs = [int(x) for x in numpy.frombuffer(offsets, '<u8')]
    return [raw[a:b] for a, b in zip(offs, offs[1:] + [len(raw)])]


class Expect:
    """What zarrita should return for one array of a store."""

    def __init__(self, dtype, shape, chunks, names, values_as, values, np_dtype=None,
                 fill=None, kind='number', check_fill=None):
        self.dtype, self.shape, self.chunks, self.names = dtype, shape, chunks, names
        self.values_as, self.values, self.np_dtype = values_as, values, np_dtype
        self.fill, self.attrs, self.kind = fill, {}, kind
        # whether fill_value is checked: by default when one is given (a
        # v2 dimension's null is checked too)
        self.check_fill = fill is not None if check_fill is None else check_fill


def number_fill(f):
    """A cell_val_num 1 number field's fill as one Python value."""
    return numpy.frombuffer(bytes.fromhex(f['fill_hex']), f['dtype'])[0].item()


def dense_expectations(info, expected, schema, version):
    """name -> Expect for every array the __zarr of a dense array shows:
    info is its case.json (or group member) part, expected(path) its
    expected bytes, schema its __array.json schema."""
    dims = info['dims']
    shape = list(info['view_shape'])
    extents = [d['tile_extent'] for d in dims]
    dnames = [d['name'] for d in dims]
    attrs_schema = {a['name'] or '__attr': a for a in schema['attrs']}
    enums = {e['name']: e for e in schema.get('enumerations') or []}
    out = {}
    for name, f in info['fields'].items():
        if f['role'] != 'attr' or name not in expected.paths:
            continue
        kind, cvn = field_kind(f), f['cell_val_num']
        raw = expected(name)
        attrs = {}
        if kind in ('vlen-utf8', 'vlen-bytes'):
            items = var_items(raw, expected(name + '.offsets'))
            if kind == 'vlen-utf8':
                e = Expect('v2:object' if version == 2 else 'string', shape, extents, dnames,
                           'string', [x.decode('utf-8') for x in items], kind=kind)
            else:
                e = Expect('v2:object' if version == 2 else 'bytes', shape, extents, dnames,
                           'hex', items, kind=kind)
        elif kind == 'fixed-bytes':
            tail = [cvn] if cvn > 1 and version == 3 else []
            if version == 2:
                e = Expect(f'v2:S{cvn}', shape, extents, dnames, 'hex',
                           [raw[i:i + cvn] for i in range(0, len(raw), cvn)], kind=kind)
            else:
                e = Expect('uint8', shape + tail, extents + tail,
                           dnames + [f'__{name}_values'] * len(tail), 'number',
                           numpy.frombuffer(raw, '|u1'), '|u1', kind=kind)
        elif kind == 'datetime':
            fill = numpy.frombuffer(bytes.fromhex(f['fill_hex']), '<i8')[0].item()
            e = Expect('int64', shape, extents, dnames, 'bigint',
                       numpy.frombuffer(raw, '<i8'), '<i8', fill=fill, kind=kind)
            if version == 3:
                attrs['units'] = tdb_units(f['datatype'])
        else:
            dt = numpy.dtype(f['dtype'])
            tail = [cvn] if cvn > 1 else []
            values_as = 'bool' if dt.kind == 'b' else 'bigint' if dt.itemsize == 8 and \
                dt.kind in 'iu' else 'number'
            e = Expect(ZDTYPE[f['dtype'][1:]], shape + tail, extents + tail,
                       dnames + [f'__{name}_values'] * len(tail), values_as,
                       numpy.frombuffer(raw, dt), f['dtype'],
                       fill=number_fill(f) if cvn == 1 else None)
        if f.get('nullable'):
            attrs['ancillary_variables'] = name + '.validity'
            valid = [b != 0 for b in expected(name + '.validity')]
            out[name + '.validity'] = Expect('bool', shape, extents, dnames, 'bool', valid,
                                             fill=bool(f['fill_valid']))
        enum = attrs_schema.get(name, {}).get('enumeration')
        if enum:
            values = info_enumeration(info, enum)
            attrs.update(enumeration=enum, flag_values=list(range(len(values))),
                         flag_meanings=values)
            out[name + '.labels'] = labels_expect(enums[enum], values, e, version)
        e.attrs = attrs
        out[name] = e
    for d, dim in enumerate(dims):
        lo = info['view_region'][d][0]
        npd = TDB_NUMPY[dim['datatype']]
        coords = numpy.arange(lo, lo + shape[d], dtype=npd)
        out[dim['name']] = Expect(ZDTYPE[npd[1:]], [shape[d]], [extents[d]], [dim['name']],
                                  'bigint' if npd[2] == '8' else 'number', coords, npd,
                                  fill=None if version == 2 else 0, check_fill=True)
    return out


def info_enumeration(info, name):
    """The values of enumeration `name` as case.json lists them."""
    return info['enumerations'][name]


def labels_expect(enum, values, codes, version):
    """ATTR.labels/: each cell's enumeration value (a code with none gives
    the labels' fill: empty, 0 or NaN)."""
    n = len(values)
    idx = [int(c) for c in codes.values]
    shape, chunks, names = codes.shape, codes.chunks, codes.names
    if enum['cell_val_num'] == 'var' and enum['datatype'] in BYTE_TYPES:
        vals = [values[c] if 0 <= c < n else '' for c in idx]
        if enum['datatype'] in STRINGS:
            return Expect('v2:object' if version == 2 else 'string', shape, chunks, names,
                          'string', vals, kind='vlen-utf8')
        return Expect('v2:object' if version == 2 else 'bytes', shape, chunks, names,
                      'hex', [v.encode() for v in vals], kind='vlen-bytes')
    assert enum['cell_val_num'] == 1, f'test_zarrita: enumeration {enum} is not handled yet'
    npd = TDB_NUMPY[enum['datatype']]
    miss = float('nan') if npd[1] == 'f' else 0
    vals = numpy.array([values[c] if 0 <= c < n else miss for c in idx], npd)
    return Expect(ZDTYPE[npd[1:]], shape, chunks, names,
                  'bigint' if npd[2] == '8' and npd[1] in 'iu' else 'number', vals, npd)


# ------------------------------------------------------------------ checks

def same_number(got, want):
    """A fill or attribute value as zarrita's JSON has it (NaN as "NaN";
    64-bit integers through a double in v2) equals want."""
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return got == want
    if isinstance(want, float) and want != want:
        return got == 'NaN'
    try:
        return float(got) == float(want)
    except (TypeError, ValueError):
        return False


def check_values(line, e):
    """None when zarrita's values are e's, else what differs."""
    got = line['values']
    if line['values_as'] != e.values_as:
        return f'values as {line["values_as"]}, expected {e.values_as}'
    if len(got) != len(e.values):
        return f'{len(got)} values, expected {len(e.values)}'
    if e.values_as in ('number', 'bigint'):
        want = numpy.asarray(e.values, e.np_dtype)
        if want.dtype.kind == 'f':
            have = numpy.array([float(x) for x in got], want.dtype)
            nan = numpy.isnan(want)
            if not numpy.array_equal(nan, numpy.isnan(have)) or \
                    have[~nan].tobytes() != want[~nan].tobytes():
                bad = [i for i in range(len(got)) if not (nan[i] and numpy.isnan(have[i]))
                       and have[i].tobytes() != want[i].tobytes()]
                return f'values differ at {len(bad)} cells, first {bad[0]}: ' \
                       f'{got[bad[0]]!r}, expected {want[bad[0]]!r}'
            return None
        have = numpy.array([int(x) for x in got], want.dtype)
    elif e.values_as == 'hex':
        have = [bytes.fromhex(x) for x in got]
        want = list(e.values)
        if have != want:
            bad = [i for i in range(len(have)) if have[i] != want[i]]
            return f'values differ at {len(bad)} cells, first {bad[0]}: ' \
                   f'{have[bad[0]]!r}, expected {want[bad[0]]!r}'
        return None
    else:
        have, want = list(got), list(e.values)
        if e.values_as == 'bool':
            want = [bool(x) for x in want]
    if not numpy.array_equal(numpy.asarray(have), numpy.asarray(want)):
        bad = [i for i in range(len(got)) if have[i] != want[i]]
        return f'values differ at {len(bad)} cells, first {bad[0]}: ' \
               f'{got[bad[0]]!r}, expected {want[bad[0]]!r}'
    return None


def check_meta(line, e, version):
    """What differs in an opened array's metadata, as a list."""
    bad = []
    for key, want in (('dtype', e.dtype), ('shape', e.shape), ('chunks', e.chunks),
                      ('dimension_names', e.names)):
        if line[key] != want:
            bad.append(f'{key} {line[key]!r}, expected {want!r}')
    if e.check_fill and not same_number(line['fill_value'], e.fill):
        bad.append(f'fill_value {line["fill_value"]!r}, expected {e.fill!r}')
    attrs = line['attrs']
    for key, want in e.attrs.items():
        if key == 'flag_meanings':
            words = str(attrs.get(key, '')).split(' ')
            ok = len(words) == len(want) and all(
                w == v.replace(' ', '_') if isinstance(v, str) else same_number(w, v)
                for w, v in zip(words, want))
            if not ok:
                bad.append(f'attribute {key} {attrs.get(key)!r}, expected the words of {want!r}')
        elif attrs.get(key) != want:
            bad.append(f'attribute {key} {attrs.get(key)!r}, expected {want!r}')
    if version == 2 and attrs.get('_ARRAY_DIMENSIONS') != e.names:
        bad.append(f'_ARRAY_DIMENSIONS {attrs.get("_ARRAY_DIMENSIONS")!r}, expected {e.names!r}')
    if line['plain'] != {k: line[k] for k in META_KEYS}:
        bad.append(f'its own documents say {line["plain"]!r}, the consolidated ones '
                   f'{ {k: line[k] for k in META_KEYS}!r}')
    return bad


def check_store(arrays, expect, version, where, allowed=()):
    """Every expected array of a store read by zarrita: @return (problems,
    the number of arrays read right, the limits met)."""
    problems, right, limited = [], 0, []
    missing = sorted(set(expect) - set(arrays))
    extra = sorted(set(arrays) - set(expect) - set(allowed))
    if extra:
        problems.append(f'{where or "."}: arrays the contract does not name: {extra}')
    for name, e in expect.items():
        line = arrays.get(name) or {'error': 'not in the consolidated metadata'}
        limit = LIMITS.get((version, e.kind))
        if limit:
            err = line.get('error', '')
            if err.startswith(limit):
                limited.append(f'{where}{name} ({e.kind}): {err}')
                if 'dtype' in line:
                    problems += [f'{where}{name}: {p}' for p in check_meta(line, e, version)]
            elif 'error' in line:
                problems.append(f'{where}{name}: {err} (zarrita v{version} should fail on '
                                f'{e.kind} with "{limit}")')
            else:
                why = check_values(line, e)
                problems.append(f'{where}{name}: zarrita v{version} now reads {e.kind} '
                                f'({why or "right"}): drop LIMITS[{(version, e.kind)}]')
            continue
        if 'error' in line:
            problems.append(f'{where}{name}: {line["error"]}')
            continue
        bad = check_meta(line, e, version)
        why = check_values(line, e)
        if why:
            bad.append(why)
        if bad:
            problems.append(f'{where}{name}: ' + '; '.join(bad))
        else:
            right += 1
    if missing:
        problems.insert(0, f'{where or "."}: arrays zarrita does not list: {missing}')
    return problems, right, limited


def report(what, version, total, problems, right, limited):
    """Says the counts (pytest -s shows them), warns of the limits met and
    fails with every problem."""
    print(f'\nzarrita v{version} {what}: {right} of {total} arrays read right, '
          f'{len(limited)} beyond zarrita 0.7.5')
    for lim in limited:
        warnings.warn(ZarritaLimit(f'zarrita v{version} cannot read {what} {lim}'))
    assert not problems, f'zarrita v{version} {what}:\n  ' + '\n  '.join(problems)


def decode_meta(datatype, raw):
    """An array metadata value as the contract's .zattrs holds it, or
    KeyError for a type it leaves out."""
    if datatype in BYTE_TYPES:
        return raw.decode('utf-8')
    npd = TDB_NUMPY.get(datatype) or ('<i8' if datatype.startswith(('DATETIME_', 'TIME_'))
                                      else None)
    if npd is None:
        raise KeyError(datatype)
    vals = numpy.frombuffer(raw, npd).tolist()
    return vals[0] if len(vals) == 1 else vals


def check_group_attrs(attrs, meta, expected):
    """The root attributes of a store: the metadata's values, each key."""
    bad = []
    want = {}
    for key, m in meta.items():
        try:
            want[key] = decode_meta(m['datatype'], expected(m['file']))
        except (KeyError, UnicodeDecodeError):
            pass
    for key in attrs:
        if key not in meta:
            bad.append(f'attribute {key} is no metadata key')
    for key, v in want.items():
        got = attrs.get(key)
        same = (len(got) == len(v) and all(same_number(a, b) for a, b in zip(got, v))) \
            if isinstance(v, list) and isinstance(got, list) else same_number(got, v)
        if not same:
            bad.append(f'attribute {key} {got!r}, expected {v!r}')
    return bad


class Expected:
    """The expected files of a case (under a prefix: a group member's)."""

    def __init__(self, case, prefix=''):
        self.case, self.prefix = case, prefix
        self.paths = [p[len(prefix):] for p in case.expected_paths if p.startswith(prefix)]

    def __call__(self, path):
        return self.case.expected(self.prefix + path)


def schema_of(mnt):
    with open(os.path.join(mnt, '__array.json')) as f:
        return json.load(f)['schema']


def schema_names(schema):
    """Every array a dense array's __zarr may hold: attributes, their
    companions, dimensions."""
    names = set()
    for a in schema['attrs']:
        n = a['name'] or '__attr'
        names |= {n, n + '.validity', n + '.labels'}
    return names | {d['name'] for d in schema['dims']}


# ------------------------------------------------------------------- tests

@pytest.mark.parametrize('version', [2, 3], ids=['v2', 'v3'])
def test_zarrita_dense_case(dense_case, version, zarrita, mount, tmp_path):
    """zarrita (v2: consolidated .zmetadata; v3: the root zarr.json's
    consolidated_metadata; each array opened again from its own documents)
    reads every array of a dense case's __zarr: attributes of every kind,
    validity, enumeration labels and codes' CF flags, the dimensions'
    coordinates; dtype, shape, chunks (the tile extents), dimension names,
    fill values and every value equal to the expected view."""
    case = dense_case
    mnt = mount(case.array, case_options(case, tmp_path))
    schema = schema_of(mnt)
    expect = dense_expectations(case.info, Expected(case), schema, version)
    groups, arrays = zarrita(os.path.join(mnt, '__zarr'), version)
    problems, right, limited = check_store(arrays, expect, version, '',
                                           schema_names(schema))
    problems += check_group_attrs(groups['/']['attrs'], case.info.get('metadata') or {},
                                  Expected(case))
    report(case.name, version, len(expect), problems, right, limited)


def members(info, path=''):
    """(path, member info) of every member of a group's case.json, nested."""
    for name, m in info.get('members', {}).items():
        yield path + name, m
        yield from members(m, path + name + '/')


@pytest.mark.parametrize('version', [2, 3], ids=['v2', 'v3'])
def test_zarrita_group(version, zarrita, mount, tmp_path):
    """GROUP/__zarr read by zarrita: a group holding the store of each
    dense array member under its folder name (the members' metadata as
    their groups' attributes, every field as in MEMBER/__zarr), without
    the sparse ones or subgroups (sub/__zarr is a store of its own, read
    too); the group's metadata as the root's attributes."""
    case = get_case('group_basic')
    mnt = mount(case.array, case_options(case, tmp_path))
    problems, right, limited, total = [], 0, [], 0
    groups_seen = {}
    for gpath in [''] + [p for p, m in members(case.info) if m['kind'] == 'group']:
        ginfo = case.info
        for part in filter(None, gpath.split('/')):
            ginfo = ginfo['members'][part]
        root = os.path.join(mnt, gpath, '__zarr')
        groups, arrays = zarrita(root, version)
        groups_seen[gpath] = groups
        problems += [f'{gpath or "."}/__zarr: {p}' for p in check_group_attrs(
            groups['/']['attrs'], ginfo.get('metadata') or {}, Expected(case, gpath + '/' if gpath else ''))]
        want_groups = {'/'}
        for name, m in ginfo.get('members', {}).items():
            if m['kind'] != 'array' or m['array_type'] != 'dense':
                continue
            want_groups.add('/' + name)
            prefix = (gpath + '/' if gpath else '') + name + '/'
            exp = Expected(case, prefix)
            schema = schema_of(os.path.join(mnt, prefix))
            expect = dense_expectations(m, exp, schema, version)
            mine = {k[len(name) + 1:]: v for k, v in arrays.items() if k.startswith(name + '/')}
            p, r, lim = check_store(mine, expect, version, f'{gpath or "."}/__zarr/{name}/',
                                    schema_names(schema))
            problems += p
            right += r
            limited += lim
            total += len(expect)
            if '/' + name not in groups:
                problems.append(f'{gpath or "."}/__zarr: member {name} is not a group')
            else:
                problems += [f'{gpath or "."}/__zarr/{name}: {x}' for x in check_group_attrs(
                    groups['/' + name]['attrs'], m.get('metadata') or {}, exp)]
        listed = {c['path'] for c in groups['/']['contents'] if c['kind'] == 'group'}
        if listed != want_groups:
            problems.append(f'{gpath or "."}/__zarr: groups {sorted(listed)}, expected '
                            f'{sorted(want_groups)} (dense array members only)')
        strays = [n for n in arrays if n.split('/')[0] not in
                  {g[1:] for g in want_groups}]
        if strays:
            problems.append(f'{gpath or "."}/__zarr: arrays outside the members: {strays}')
    assert '' in groups_seen and 'sub' in groups_seen
    report('group_basic', version, total, problems, right, limited)


def write_meta(mnt, key, value, datatype=None):
    """Sets array metadata KEY through a writable mount's __meta/."""
    path = os.path.join(mnt, '__meta', key)
    with open(path, 'wb') as f:
        if datatype:
            os.setxattr(path, 'user.tiledb.datatype', datatype.encode())
        f.write(value)


@pytest.mark.parametrize('version', [2, 3], ids=['v2', 'v3'])
def test_zarrita_cf_attributes(version, zarrita, mount, tmp_path):
    """Metadata keys NAME.KEY are attribute KEY of array NAME (an
    attribute, ATTR.validity, a dimension; the longest NAME that is an
    array wins), as zarrita reads them from the consolidated and from each
    array's own documents; a NAME that is no array, or an empty KEY, gives
    no array attribute, and v2's _ARRAY_DIMENSIONS stays the store's.
    Every key is an attribute of the root as well."""
    case = get_case('dense_var_nullable')
    arr = str(tmp_path / 'arr')
    shutil.copytree(case.array, arr)
    rw = mount(arr, ['rw'])
    write_meta(rw, 'n_i32.units', b'm')
    write_meta(rw, 'n_i32.validity.long_name', b'valid cells')
    write_meta(rw, 'r.standard_name', b'row')
    write_meta(rw, 'n_u8._FillValue', bytes([7]), 'UINT8')
    write_meta(rw, 'n_f64x2.scale', numpy.array([0.5, 2], '<f8').tobytes(), 'FLOAT64')
    write_meta(rw, 'n_i32._ARRAY_DIMENSIONS', b'x')
    write_meta(rw, 'nosuch.units', b'z')
    write_meta(rw, 'n_i32.', b'empty key')
    assert not mount.unmount(rw)
    mnt = mount(arr)
    groups, arrays = zarrita(os.path.join(mnt, '__zarr'), version)
    want = {'n_i32': {'units': 'm'}, 'n_i32.validity': {'long_name': 'valid cells'},
            'r': {'standard_name': 'row'}, 'n_u8': {'_FillValue': 7},
            'n_f64x2': {'scale': [0.5, 2]}}
    problems = []
    for name, attrs in want.items():
        line = arrays.get(name, {})
        if 'attrs' not in line:
            problems.append(f'{name}: {line.get("error", "not listed")}')
            continue
        for key, value in attrs.items():
            for where in ('attrs', 'plain'):
                got = line[where]['attrs'] if where == 'plain' else line['attrs']
                if got.get(key) != value:
                    problems.append(f'{name} ({where}): attribute {key} {got.get(key)!r}, '
                                    f'expected {value!r}')
    for name, line in arrays.items():
        if 'attrs' not in line:
            continue
        a = line['attrs']
        if name == 'n_i32' and ('validity.long_name' in a or '' in a):
            problems.append(f'n_i32: attributes {a!r} (the longest NAME wins; no empty KEY)')
        if 'units' in a and name != 'n_i32':
            problems.append(f'{name}: attribute units {a["units"]!r} is no key of it')
    if version == 2 and arrays.get('n_i32', {}).get('attrs', {}).get('_ARRAY_DIMENSIONS') != ['r', 'c']:
        problems.append('n_i32: _ARRAY_DIMENSIONS is not the store\'s ["r", "c"]')
    root = groups['/']['attrs']
    for key, value in (('n_i32.units', 'm'), ('nosuch.units', 'z'), ('n_u8._FillValue', 7)):
        if root.get(key) != value:
            problems.append(f'root: attribute {key} {root.get(key)!r}, expected {value!r}')
    assert not problems, f'zarrita v{version} CF attributes:\n  ' + '\n  '.join(problems)


# ------------------------------------------------------ dimension labels

LABELS = os.path.join(REPO, 'tests', 'fixtures', 'dense_dim_labels')


def labels_expected(name):
    with open(os.path.join(LABELS, 'expected', name), 'rb') as f:
        return f.read()


@pytest.mark.parametrize('version', [2, 3], ids=['v2', 'v3'])
def test_zarrita_dimension_labels(version, zarrita, mount):
    """tests/fixtures/dense_dim_labels (written by TileDB 2.29.2, its
    expected files read back by TileDB): zarrita reads each dimension label
    as an array along its dimension, lat as float64 and name as strings,
    equal to TileDB's reads, and t, equal to TileDB's too, names them in
    CF's coordinates."""
    mnt = mount(os.path.join(LABELS, 'array'))
    _, arrays = zarrita(os.path.join(mnt, '__zarr'), version)
    lat, name, t = arrays['lat'], arrays['name'], arrays['t']
    assert lat['dtype'] == 'float64' and lat['shape'] == [8] and lat['chunks'] == [4]
    assert lat['dimension_names'] == ['y'] and name['dimension_names'] == ['x']
    assert numpy.array(lat['values'], '<f8').tobytes() == labels_expected('lat')
    offs = numpy.frombuffer(labels_expected('name.offsets'), '<u8').tolist()
    raw = labels_expected('name')
    want = [raw[a:b].decode() for a, b in zip(offs, offs[1:] + [len(raw)])]
    assert name['values_as'] == 'string' and name['values'] == want
    assert name['dtype'] == ('string' if version == 3 else 'v2:object')
    assert numpy.array(t['values'], '<f4').tobytes() == labels_expected('t')
    assert t['attrs']['coordinates'] == 'lat name'
