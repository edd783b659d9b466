"""test_groups.py: the mount contract's "A group" end to end: groups made here byte by byte (group details as TileDB writes them) around corpus arrays; a missing or damaged member is left out (the rest mounts, __group.json and the log say why); member names a group folder cannot hold as they are (".", "..", "__group.json", "__meta") are percent-encoded and reachable."""
import json
import os
import shutil
import struct

import pytest

from conftest import get_case, run_cat
from test_write import cat_bytes as cat_ok


# ---------------------------------------------------------------- writing

def generic_tile(payload):
    """One generic tile (format_spec/generic_tile.md) holding `payload`
    unfiltered: the header, an empty filter pipeline, one chunk."""
    pipeline = struct.pack('<II', 65536, 0)        # max chunk size, no filters
    chunks = struct.pack('<QIII', 1, len(payload), len(payload), 0) + payload
    header = struct.pack('<IQQBQBI', 22, len(chunks), len(payload), 4, 1, 0,
                         len(pipeline))
    return header + pipeline + chunks


def group_details(members):
    """Group details version 2 (format_spec/group.md): members are
    (uri, name or None, relative, type) with type 'array' or 'group'."""
    out = struct.pack('<IQ', 2, len(members))
    for uri, name, relative, kind in members:
        u = uri.encode()
        out += struct.pack('<IBBQ', 2, 1 if kind == 'group' else 2, 1 if relative else 0,
                           len(u)) + u
        if name is None:
            out += b'\x00'
        else:
            n = name.encode()
            out += b'\x01' + struct.pack('<Q', len(n)) + n
        out += b'\x00'                              # not deleted
    return out


def make_group(folder, members):
    """A TileDB group at `folder` (made if missing) with `members`."""
    os.makedirs(os.path.join(folder, '__group'), exist_ok=True)
    os.makedirs(os.path.join(folder, '__meta'), exist_ok=True)
    open(os.path.join(folder, '__tiledb_group.tdb'), 'wb').close()
    name = '__1_1_' + '0123456789abcdef' * 2 + '_2'
    with open(os.path.join(folder, '__group', name), 'wb') as f:
        f.write(generic_tile(group_details(members)))


def copy_array(case_name, dest):
    """The array of corpus case `case_name` copied to `dest`; the case."""
    case = get_case(case_name)
    shutil.copytree(case.array, dest)
    return case


def group_json(cat_prog, source, opts=()):
    return json.loads(cat_ok(cat_prog, source, '__group.json', opts))


def members_by_name(doc):
    return {m['name']: m for m in doc['members']}


# -------------------------------------------------------- missing members

def test_missing_member_left_out(cat_prog, mount, tmp_path):
    """One member deleted from disk: the group still mounts, the others
    read as before; the missing one is not listed, __group.json says why,
    and the daemon logs it at start."""
    g = str(tmp_path / 'g')
    os.makedirs(g)
    case = copy_array('dense_1d_basic', os.path.join(g, 'arrays', 'kept'))
    make_group(g, [('arrays/kept', 'kept', True, 'array'),
                   ('arrays/deleted', 'deleted', True, 'array'),
                   ('arrays/kept/__fragments', 'junk', True, 'array')])
    doc = members_by_name(group_json(cat_prog, g))
    assert set(doc) == {'kept', 'deleted', 'junk'}
    assert 'error' not in doc['kept']
    assert 'no such file or folder' in doc['deleted']['error'], doc['deleted']
    assert 'not a TileDB array or group' in doc['junk']['error'], doc['junk']
    listing = cat_ok(cat_prog, g, '').decode().split('\n')
    assert 'kept' in listing and 'deleted' not in listing and 'junk' not in listing
    assert cat_ok(cat_prog, g, 'kept/a') == case.expected('a')
    r = run_cat(cat_prog, g, 'deleted/a')
    assert r.returncode != 0

    mnt = mount(g)
    # __zarr: the group's Zarr store, of its dense array kept
    assert sorted(os.listdir(mnt)) == ['__group.json', '__meta', '__zarr', 'kept']
    assert sorted(os.listdir(os.path.join(mnt, '__zarr'))) == [
        '.zattrs', '.zgroup', '.zmetadata', 'kept', 'zarr.json']
    with open(os.path.join(mnt, 'kept', 'a'), 'rb') as f:
        assert f.read() == case.expected('a')
    assert not os.path.exists(os.path.join(mnt, 'deleted'))
    errpath = mount.active[-1][2]
    mount.unmount(mnt)
    with open(errpath, 'rb') as f:
        log = f.read().decode(errors='replace')
    assert 'member deleted left out' in log and 'no such file or folder' in log, log
    assert 'member junk left out' in log, log


def test_damaged_member_left_out(cat_prog, tmp_path):
    """A member whose schema is damaged is left out; the other member and
    the group's own files still read."""
    g = str(tmp_path / 'g')
    os.makedirs(g)
    good = copy_array('dense_1d_basic', os.path.join(g, 'good'))
    copy_array('dense_1d_basic', os.path.join(g, 'bad'))
    schema_dir = os.path.join(g, 'bad', '__schema')
    for name in os.listdir(schema_dir):
        p = os.path.join(schema_dir, name)
        if os.path.isfile(p):
            with open(p, 'r+b') as f:
                f.truncate(20)
    make_group(g, [('good', None, True, 'array'), ('bad', None, True, 'array')])
    doc = members_by_name(group_json(cat_prog, g))
    assert 'error' in doc['bad'] and 'error' not in doc['good'], doc
    assert cat_ok(cat_prog, g, 'good/a') == good.expected('a')
    assert 'bad' not in cat_ok(cat_prog, g, '').decode().split('\n')


def test_member_cycle_left_out(cat_prog, tmp_path):
    """Members that are the group itself or its parent are left out
    instead of nesting without end."""
    g = str(tmp_path / 'g')
    make_group(os.path.join(g, 'sub'), [('..', 'up', True, 'group'), ('.', 'self', True, 'group')])
    case = copy_array('dense_1d_basic', os.path.join(g, 'arr'))
    make_group(g, [('sub', 'sub', True, 'group'), ('arr', 'arr', True, 'array')])
    doc = members_by_name(group_json(cat_prog, g, ))
    assert 'error' not in doc['sub']
    sub = members_by_name(json.loads(cat_ok(cat_prog, g, 'sub/__group.json')))
    assert 'itself' in sub['up']['error'] and 'itself' in sub['self']['error'], sub
    assert cat_ok(cat_prog, g, 'arr/a') == case.expected('a')


# ------------------------------------------------------------ odd names

RESERVED = {'.': '%2E', '..': '%2E.', '__group.json': '%5F_group.json', '__meta': '%5F_meta',
            '__zarr': '%5F_zarr'}


def test_reserved_member_names(cat_prog, mount, tmp_path):
    """Members named ".", "..", "__group.json", "__meta" and "__zarr" are
    listed once each, percent-encoded, and can be read; the group's own
    __group.json, __meta/ and __zarr/ stay what they are (__zarr holds
    every member, under its shown name)."""
    g = str(tmp_path / 'g')
    os.makedirs(g)
    case = copy_array('dense_1d_basic', os.path.join(g, 'arr'))
    make_group(g, [('arr', name, True, 'array') for name in RESERVED] +
               [('arr', 'plain', True, 'array'), ('arr', 'a/b%c', True, 'array')])
    shown = sorted(list(RESERVED.values()) + ['plain', 'a%2Fb%25c'])
    listing = [n for n in cat_ok(cat_prog, g, '').decode().split('\n') if n]
    assert sorted(listing) == sorted(shown + ['__group.json', '__meta', '__zarr']), listing
    doc = group_json(cat_prog, g)
    assert sorted(m['name'] for m in doc['members']) == sorted(list(RESERVED) + ['plain', 'a/b%c'])
    assert all('error' not in m for m in doc['members']), doc
    for name in shown:
        assert cat_ok(cat_prog, g, name + '/a') == case.expected('a'), name

    mnt = mount(g)
    entries = os.listdir(mnt)
    assert sorted(entries) == sorted(shown + ['__group.json', '__meta', '__zarr']), entries
    members = [n for n in os.listdir(os.path.join(mnt, '__zarr')) if n[0] != '.']
    assert sorted(members) == sorted(shown + ['zarr.json']), members
    assert len(entries) == len(set(entries))
    for name in shown:
        with open(os.path.join(mnt, name, 'a'), 'rb') as f:
            assert f.read() == case.expected('a'), name
    with open(os.path.join(mnt, '__group.json'), 'rb') as f:
        assert json.loads(f.read())['type'] == 'group'
    assert os.listdir(os.path.join(mnt, '__meta')) == []


def test_member_name_clash(cat_prog, tmp_path):
    """An unnamed member whose uri ends like another member's name is left
    out (a folder cannot hold two entries of one name), and says so."""
    g = str(tmp_path / 'g')
    os.makedirs(g)
    case = copy_array('dense_1d_basic', os.path.join(g, 'x', 'arr'))
    copy_array('dense_1d_basic', os.path.join(g, 'y', 'arr'))
    make_group(g, [('x/arr', None, True, 'array'), ('y/arr', None, True, 'array')])
    doc = group_json(cat_prog, g)
    errors = [m for m in doc['members'] if 'error' in m]
    assert len(errors) == 1 and 'name of another member' in errors[0]['error'], doc
    listing = [n for n in cat_ok(cat_prog, g, '').decode().split('\n') if n]
    assert listing.count('arr') == 1
    assert cat_ok(cat_prog, g, 'arr/a') == case.expected('a')
