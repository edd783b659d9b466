"""test_s3_groups.py: group members of an object store's source (s3:// or azure://) stay under the source's own bucket (container) and prefix (README "Security model"), against every S3 server of s3fixture.py and Azurite."""
import json

from conftest import get_case, run_cat
from test_groups import generic_tile, group_details


def upload_group(client, prefix, members):
    client.put(prefix + '/__tiledb_group.tdb', b'')
    client.put(prefix + '/__group/__1_1_' + '0123456789abcdef' * 2 + '_2',
           generic_tile(group_details(members)))


def test_s3_group_members_stay_under_prefix(cat_prog, store_server, tmp_path):
    """Members in another bucket, above the group's prefix (relative with
    .., or an s3:// (azure://) uri of the same bucket), in the other object
    store or on local disk are left out; members under the prefix are
    followed, relative or absolute; asking for group_members=any is
    refused for an object store."""
    s3_server = store_server
    scheme = s3_server.scheme
    other = 'azure' if scheme == 's3' else 's3'   # the other store's scheme
    public, secret = get_case('dense_1d_basic'), get_case('sparse_int64_2d')
    top = tmp_path.name + '/members'   # a prefix of this test's own
    bucket = s3_server.bucket
    s3_server.upload(public.array, top + '/pub/g/ok')
    s3_server.upload(secret.array, top + '/secret/arr')
    upload_group(s3_server.client, top + '/pub/g', [
        ('ok', 'ok', True, 'array'),
        (f'{scheme}://{bucket}/{top}/pub/g/ok', 'absin', False, 'array'),
        ('sub/../ok', 'dotted', True, 'array'),
        ('../../secret/arr', 'climb', True, 'array'),
        (f'{scheme}://{bucket}/{top}/secret/arr', 'samebucket', False, 'array'),
        (f'{scheme}://{bucket}/{top}/pub/g/../../secret/arr', 'dots', False, 'array'),
        (f'{scheme}://another-bucket/{top}/secret/arr', 'other', False, 'array'),
        (f'{other}://{bucket}/{top}/pub/g/ok', 'otherstore', False, 'array'),
        ('file:///etc', 'etc', False, 'group')])
    url = f'{scheme}://{bucket}/{top}/pub/g'
    r = run_cat(cat_prog, url, '__group.json')
    assert r.returncode == 0, r.stderr
    doc = {m['name']: m for m in json.loads(r.stdout)['members']}
    for name in ('ok', 'absin', 'dotted'):
        assert 'error' not in doc[name], doc[name]
        got = run_cat(cat_prog, url, name + '/a')
        assert got.returncode == 0 and got.stdout == public.expected('a'), (name, got.stderr)
    for name in ('climb', 'samebucket', 'dots', 'other', 'otherstore', 'etc'):
        assert 'outside the source' in doc[name].get('error', ''), doc[name]
        assert run_cat(cat_prog, url, name + '/a').returncode != 0
    listing = run_cat(cat_prog, url, '').stdout.decode().split('\n')
    assert sorted(n for n in listing if n) == ['__group.json', '__meta', '__zarr', 'absin', 'dotted', 'ok']
    r = run_cat(cat_prog, url, '', ['group_members=any'])
    assert r.returncode != 0 and b'group_members=any' in r.stderr, r.stderr
