"""test_copy.py: tiledbfs-copy checks what it copied against the array's own references (each commit's fragment, the files each fragment's metadata names, schemas and metadata), finds by name what a listing left out, fails loudly on a damaged source or a lost write, and refuses a destination inside the source (local, s3:// and azure://) before writing anything.  The object store tests run on every store of conftest.py's store_server (the S3 servers and Azurite)."""
import hashlib
import os
import shutil

import pytest

from conftest import (case_options, find_program, get_case, o_args, ok, read_tree,
                      one_line_error, run)
from s3fixture import VerifyingProxy


@pytest.fixture(scope='session')
def copy_prog():
    return find_program(os.path.join('tools', 'tiledbfs-copy'))


def tree_state(root):
    """Every folder and file under root, with each file's SHA-256 and
    mode: what must not change."""
    out = {}
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        out[rel + '/'] = os.lstat(d).st_mode
        for f in files:
            p = os.path.join(d, f)
            with open(p, 'rb') as fh:
                out[os.path.relpath(p, root)] = (hashlib.sha256(fh.read()).hexdigest(),
                                                 os.lstat(p).st_mode)
    return out


def tree_digests(root):
    """{relative path: SHA-256} of every file under root."""
    return {k: hashlib.sha256(v).hexdigest() for k, v in read_tree(root).items()}


def bucket_state(server, prefix):
    """Every key under prefix/ with the SHA-256 of its bytes."""
    return {k: hashlib.sha256(server.client.get(k)).hexdigest()
            for k in server.client.keys(prefix + '/')}


def fragment_file(array, name):
    """The path, relative to array, of file `name` of its first fragment."""
    frags = sorted(os.listdir(os.path.join(array, '__fragments')))
    return f'__fragments/{frags[0]}/{name}'


def listed_prefixes(server, prefix):
    """The CommonPrefixes (BlobPrefixes) of a one-level listing of prefix/."""
    return [p[len(prefix) + 1:] for p in server.client.prefixes(prefix + '/')]


# ------------------------------------- listings that leave folders out

@pytest.mark.parametrize('name', ['dense_var_nullable', 'group_basic', 'sparse_delete',
                                  'consolidated_fragment_meta', 'encrypted_aes256gcm'])
def test_copy_from_listing_without_prefixes(name, store_server, copy_prog, cat_prog, tmp_path):
    """s3rver gives no CommonPrefix for a folder that holds only folders
    (prefix=A/&delimiter=/ does not show A/__fragments/): the copy finds
    what the commits and fragment metadata name there, and the copy holds
    every file of the source (on 0ecab01: a third of them, and exit 0).
    radosgw and Azurite list them: nothing is said missing."""
    s3_server = store_server
    case = get_case(name)
    prefix = f'copy/{tmp_path.name}/{name}'
    s3_server.upload(case.array, prefix)
    shown = listed_prefixes(s3_server, prefix)
    if name != 'group_basic':
        # the reproduction: s3rver leaves __fragments/ out, radosgw (and
        # Azurite) show it
        assert ('__fragments/' in shown) == (s3_server.name != 's3rver'), shown
    back = tmp_path / 'back'
    out = ok(run([copy_prog, '-v', s3_server.url(prefix), str(back)])).decode()
    local = tree_digests(case.array)
    assert tree_digests(str(back)) == local
    assert out.startswith(f'{len(local)} files, '), out
    assert ('not in the source' in out) == (s3_server.name == 's3rver'), out
    opts = case_options(case, tmp_path)
    for path in case.expected_paths:
        assert ok(run([cat_prog] + o_args(opts) + [str(back), path])) == \
            case.expected(path), path


def test_copy_s3_damaged_source(store_server, copy_prog, tmp_path):
    """A fragment file gone from the bucket: the copy fails naming it and
    the fragment, writes nothing, and the source keeps every key."""
    s3_server = store_server
    case = get_case('dense_var_nullable')
    prefix = f'copy/{tmp_path.name}/damaged'
    s3_server.upload(case.array, prefix)
    lost = fragment_file(case.array, 'a1_var.tdb')
    s3_server.client.delete(f'{prefix}/{lost}')
    before = bucket_state(s3_server, prefix)
    back = tmp_path / 'back'
    one_line_error(run([copy_prog, s3_server.url(prefix), str(back)]),
                   'the source is incomplete', lost, 'is missing',
                   'the metadata of fragment ' + os.path.dirname(lost))
    assert not back.exists()
    assert bucket_state(s3_server, prefix) == before
    dst = f'copy/{tmp_path.name}/damaged-copy'
    one_line_error(run([copy_prog, s3_server.url(prefix), s3_server.url(dst)]), lost)
    assert s3_server.client.keys(dst + '/') == []


# ------------------------------------------------- a damaged source

@pytest.fixture
def damaged(tmp_path):
    """A copy of dense_var_nullable (two fragments) to damage."""
    case = get_case('dense_var_nullable')
    src = tmp_path / 'src'
    shutil.copytree(case.array, src)
    return src


def refused(copy_prog, src, dst, *needles):
    """The copy fails with one line naming needles (up to '-o', then its
    options), writes nothing, and leaves the source as it was."""
    opts = needles[needles.index('-o'):] if '-o' in needles else ()
    needles = needles[:len(needles) - len(opts)]
    before = tree_state(src)
    one_line_error(run([copy_prog, *opts, str(src), str(dst)]), *needles)
    assert not os.path.lexists(dst)
    assert tree_state(src) == before


def test_copy_missing_fragment_file(damaged, copy_prog, tmp_path):
    lost = fragment_file(damaged, 'a1_var.tdb')
    os.unlink(damaged / lost)
    refused(copy_prog, damaged, tmp_path / 'dst', 'the source is incomplete', lost,
            'named by the metadata of fragment ' + os.path.dirname(lost), 'is missing')


def test_copy_truncated_fragment_file(damaged, copy_prog, tmp_path):
    cut = fragment_file(damaged, 'a0.tdb')
    size = os.path.getsize(damaged / cut)
    os.truncate(damaged / cut, 3)
    refused(copy_prog, damaged, tmp_path / 'dst', 'the source is damaged', cut,
            'holds 3 bytes', f'says {size}')


def test_copy_missing_fragment_folder(damaged, copy_prog, tmp_path):
    """A commit whose fragment folder is gone."""
    frag = os.path.dirname(fragment_file(damaged, 'a0.tdb'))
    shutil.rmtree(damaged / frag)
    refused(copy_prog, damaged, tmp_path / 'dst', f'{frag}/__fragment_metadata.tdb',
            f'the commit of fragment {frag}', 'is missing')


def test_copy_missing_group_member_file(tmp_path, copy_prog):
    """A member array of a group, checked as the group's own files are."""
    case = get_case('group_basic')
    src = tmp_path / 'src'
    shutil.copytree(case.array, src)
    lost = 'nested/x/' + fragment_file(src / 'nested' / 'x', 'a0.tdb')
    os.unlink(src / lost)
    refused(copy_prog, src, tmp_path / 'dst', lost, 'is missing')


def test_copy_encrypted_with_key_file(tmp_path, copy_prog):
    """An encrypted array: without its key the check stops at each
    fragment's metadata file; with key_file= it reads that metadata and
    finds a data file gone.  A wrong key opens nothing and writes nothing."""
    case = get_case('encrypted_aes256gcm')
    src = tmp_path / 'src'
    shutil.copytree(case.array, src)
    key = [o for o in case_options(case, tmp_path) if o.startswith('key_file=')]
    ok(run([copy_prog, '-o', key[0], str(src), str(tmp_path / 'whole')]))
    assert tree_digests(str(tmp_path / 'whole')) == tree_digests(case.array)
    wrong = tmp_path / 'wrong.key'
    wrong.write_bytes(bytes(32))
    refused(copy_prog, src, tmp_path / 'dst', 'wrong', '-o', f'key_file={wrong}')
    lost = fragment_file(src, 'a0.tdb')
    os.unlink(src / lost)
    refused(copy_prog, src, tmp_path / 'dst', lost, 'is missing', '-o', key[0])


# ------------------------------------------ a destination that loses writes

class LosingProxy(VerifyingProxy):
    """A VerifyingProxy that answers success (200; Put Blob's 201 on Azure)
    to the PUT of each key ending in one of `lose`, without passing it on:
    a lost write."""

    def __init__(self, server, lose):
        self.lose = lose
        self.lost = []
        super().__init__(server)

    def answer(self, method, target, headers, body):
        path = target.partition('?')[0]
        if method == 'PUT' and any(path.endswith(x) for x in self.lose):
            with self.lock:
                self.lost.append(path)
            md5 = hashlib.md5(body)
            etag = '"0x%s"' % md5.hexdigest()[:15].upper() if self.azure else \
                '"%s"' % md5.hexdigest()
            return self.put_ok, [('ETag', etag), ('Content-Length', '0')], b''
        return super().answer(method, target, headers, body)


@pytest.mark.parametrize('lose,needles', [
    ('a1_var.tdb', ['the copy is incomplete', 'named by the metadata of fragment', 'is missing']),
    ('.wrt', ['the copy is incomplete', 'is not named in the copy']),
])
def test_copy_checks_the_destination(lose, needles, store_server, copy_prog, tmp_path):
    """Once copied, the destination's own references are read back: a file
    or a commit that did not arrive fails the copy."""
    s3_server = store_server
    case = get_case('dense_var_nullable')
    suffix = fragment_file(case.array, lose) if lose != '.wrt' else lose
    proxy = LosingProxy(s3_server, [suffix])
    try:
        env = dict(os.environ, **s3_server.endpoint_env(proxy.endpoint))
        r = run([copy_prog, case.array, s3_server.url(f'copy/{tmp_path.name}/lossy')], env)
    finally:
        proxy.close()
    assert proxy.lost
    one_line_error(r, *needles)


# --------------------------------------- a destination inside the source

@pytest.mark.parametrize('dst', ['A/inner', 'A', 'A/', 'A/__schema', 'A/x/y',
                                 './A/../A/inner', 'L/inner', 'A/__fragments/../inner'])
def test_copy_into_itself_local(dst, copy_prog, tmp_path):
    """A destination inside the source (through a symbolic link or '..'
    too) is refused before anything is written (on 0ecab01: inner/inner/...
    64 deep in the source, then exit 1 with a 4 kB line)."""
    case = get_case('dense_1d_basic')
    src = tmp_path / 'A'
    shutil.copytree(case.array, src)
    os.symlink('A', tmp_path / 'L')
    before = tree_state(src)
    os.chdir(tmp_path)
    one_line_error(run([copy_prog, 'A', dst]), 'the destination is inside the source',
                   'nothing was copied')
    assert tree_state(src) == before
    assert sorted(os.listdir(tmp_path)) == ['A', 'L']
    # and through the link as the source
    one_line_error(run([copy_prog, 'L', 'A/inner']), 'inside the source')
    assert tree_state(src) == before


@pytest.mark.parametrize('src,dst', [('{P}/p', '{P}/p/inner'), ('{P}/p', '{P}/p'),
                                     ('{P}/p/', '/{P}/p/inner/'), ('', '{P}/p/x')])
def test_copy_into_itself_s3(src, dst, store_server, copy_prog, tmp_path):
    """The same for s3:// (and azure://) ends (a prefix, or the whole
    bucket, holding the destination); the bucket's keys stay as they
    were."""
    s3_server = store_server
    case = get_case('dense_1d_basic')
    prefix = f'copy/{tmp_path.name}'
    s3_server.upload(case.array, f'{prefix}/p')
    before = bucket_state(s3_server, prefix)
    top = s3_server.url('')
    r = run([copy_prog, top + src.format(P=prefix), top + dst.format(P=prefix)])
    one_line_error(r, 'the destination is inside the source', 'nothing was copied')
    assert bucket_state(s3_server, prefix) == before


def test_copy_beside_the_source_s3(store_server, copy_prog, tmp_path):
    """A prefix that only starts with the source's name is not inside it."""
    s3_server = store_server
    case = get_case('dense_1d_basic')
    prefix = f'copy/{tmp_path.name}'
    s3_server.upload(case.array, f'{prefix}/p')
    ok(run([copy_prog, s3_server.url(f'{prefix}/p'), s3_server.url(f'{prefix}/p2')]))
    assert len(s3_server.client.keys(f'{prefix}/p2/')) == len(tree_digests(case.array))


def test_copy_too_deep_one_short_line(copy_prog, tmp_path):
    """A source with folders nested more than 64 deep: one line of less
    than 1 kB (the path cut), and nothing written."""
    case = get_case('dense_1d_basic')
    src = tmp_path / 'src'
    shutil.copytree(case.array, src)
    deep = src / '__meta'
    for _ in range(70):
        deep = deep / 'inner'
    deep.mkdir(parents=True)
    refused(copy_prog, src, tmp_path / 'dst', 'nested more than 64 deep')


def test_copy_missing_source(copy_prog, tmp_path):
    one_line_error(run([copy_prog, str(tmp_path / 'none'), str(tmp_path / 'dst')]),
                   str(tmp_path / 'none'))
    assert not (tmp_path / 'dst').exists()


def test_copy_check_reads_listings_not_each_file(store_server, copy_prog, tmp_path):
    """The check of an upload reads the sizes of the copied files from
    listings (one listing ahead of the whole prefix), not one HEAD per
    file: 55 files, 2 fragments, 1 HEAD (the open's)."""
    s3_server = store_server
    case = get_case('dense_var_nullable')
    proxy = VerifyingProxy(s3_server)
    try:
        env = dict(os.environ, **s3_server.endpoint_env(proxy.endpoint))
        ok(run([copy_prog, case.array, s3_server.url(f'copy/{tmp_path.name}/cost')], env))
    finally:
        proxy.close()
    n = len(tree_digests(case.array))
    assert proxy.methods.count('PUT') == n
    assert proxy.methods.count('HEAD') <= 1, proxy.methods
