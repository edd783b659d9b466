"""test_zarr.py: MOUNT/__zarr, a dense array as a Zarr v2 group, read by the
real clients through a FUSE mount: zarr.open_consolidated,
xarray.open_zarr, dask.array.from_zarr on every dense corpus case, and a
dask.distributed cluster of 2 worker processes computing over a mounted
array; tiledbfs-cat shows the same bytes."""
import json
import os

import numpy
import pytest

from conftest import case_options, get_case, run_cat
from test_numpy import expected_array

WHY = 'is not installed (Debian: scripts/install-deps installs it)'
zarr = pytest.importorskip('zarr', reason='python3-zarr ' + WHY)
xarray = pytest.importorskip('xarray', reason='python3-xarray ' + WHY)
dask_array = pytest.importorskip('dask.array', reason='python3-dask ' + WHY)

ORDER = {'row-major': 'C', 'col-major': 'F'}


def zarr_fields(case):
    """(name, field, expected array) of the attributes __zarr shows: the
    fixed-size ones."""
    out = []
    for name, f in case.fields().items():
        if f['role'] == 'attr' and f['cell_val_num'] != 'var' and name in case.expected_paths:
            out.append((name, f, expected_array(case, name, f)))
    return out


def check_store(case, mnt, cat_prog, tmp_path):
    """Everything __zarr shows of a dense case, against its expected bytes."""
    root = os.path.join(mnt, '__zarr')
    group = zarr.open_consolidated(root, mode='r')
    dims = case.info['dims']
    shape = tuple(case.info['view_shape'])
    with open(os.path.join(root, '.zmetadata')) as f:
        meta = json.load(f)['metadata']
    for name, f, exp in zarr_fields(case):
        a = group[name]
        assert a.shape == exp.shape and a.dtype == exp.dtype, name
        assert a[...].tobytes() == exp.tobytes(), f'{name}: values differ'
        extents = tuple(d['tile_extent'] for d in dims)
        assert a.chunks[:len(dims)] == extents, name
        order = ORDER[case.info['cell_order']] if exp.ndim == len(dims) else 'C'
        assert a.order == order, name
        with open(os.path.join(root, name, '.zarray')) as z:
            assert json.load(z) == meta[f'{name}/.zarray']
        with open(os.path.join(root, name, '.zattrs')) as z:
            attrs = json.load(z)
        assert attrs['_ARRAY_DIMENSIONS'][:len(dims)] == [d['name'] for d in dims]
        if f.get('nullable'):
            v = group[name + '.validity'][...]
            assert v.dtype == bool and v.shape == shape
            assert v.astype('u1').tobytes() == case.expected(name + '.validity')
        listed = os.listdir(os.path.join(root, name))
        assert len(listed) == 3 + numpy.prod([-(-n // c) for n, c in zip(a.shape, a.chunks)])
    for d, dim in enumerate(dims):
        lo = case.info['view_region'][d][0]
        got = group[dim['name']][...]
        assert got.astype('i8').tolist() == list(range(lo, lo + shape[d])), dim['name']
    # tiledbfs-cat shows the same bytes as the mount
    opts = case_options(case, tmp_path)
    name = zarr_fields(case)[0][0] if zarr_fields(case) else dims[0]['name']
    for rel in ['.zmetadata', '.zattrs', f'{name}/.zarray',
                f'{name}/' + '.'.join('0' * len(group[name].shape))]:
        r = run_cat(cat_prog, case.array, '__zarr/' + rel, opts)
        assert r.returncode == 0, r.stderr
        with open(os.path.join(root, rel), 'rb') as f:
            assert r.stdout == f.read(), rel


def test_zarr_dense_case(case, mount, cat_prog, tmp_path):
    """zarr.open_consolidated, xarray.open_zarr and dask.array.from_zarr on
    every dense corpus case: values, shapes, dtypes, chunks (the tile
    extents), order (the cell order), validity, coordinates and the array
    metadata; sparse arrays have no __zarr."""
    if case.info.get('kind') != 'array':
        pytest.skip('not an array')
    mnt = mount(case.array, case_options(case, tmp_path))
    if not case.dense:
        assert not os.path.exists(os.path.join(mnt, '__zarr'))
        return
    check_store(case, mnt, cat_prog, tmp_path)
    ds = xarray.open_zarr(os.path.join(mnt, '__zarr'), mask_and_scale=False)
    dims = case.info['dims']
    for d, dim in enumerate(dims):
        lo, n = case.info['view_region'][d][0], case.info['view_shape'][d]
        assert ds.sizes[dim['name']] == n
        assert ds[dim['name']].values.astype('i8').tolist() == list(range(lo, lo + n))
    for name, f, exp in zarr_fields(case):
        assert ds[name].values.tobytes() == exp.tobytes(), f'xarray {name}'
        if exp.dtype.kind in 'iuf':
            got = dask_array.from_zarr(os.path.join(mnt, '__zarr'), component=name)
            assert got.sum(dtype='f8').compute() == \
                pytest.approx(exp.sum(dtype='f8'), nan_ok=True), f'dask {name}'
    meta = case.info.get('metadata') or {}
    with open(os.path.join(mnt, '__zarr', '.zattrs')) as f:
        zattrs = json.load(f)
    for key in zattrs:
        assert key in meta, key


def test_zarr_fill_is_masked(mount, tmp_path):
    """fill_value is the schema's fill: xarray (masking by default) shows the
    cells no fragment wrote as NaN."""
    case = get_case('dense_fragments_overlap')
    mnt = mount(case.array, case_options(case, tmp_path))
    ds = xarray.open_zarr(os.path.join(mnt, '__zarr'))
    exp = expected_array(case, 'a', case.fields()['a'])
    fill = numpy.frombuffer(bytes.fromhex(case.fields()['a']['fill_hex']), exp.dtype)[0]
    got = ds['a'].values
    assert (exp == fill).any()
    assert numpy.array_equal(numpy.isnan(got), exp == fill)
    assert numpy.array_equal(got[exp != fill], exp[exp != fill])


@pytest.mark.filterwarnings("ignore:make_current is deprecated:DeprecationWarning")
def test_dask_distributed(mount, tmp_path):
    """A dask.distributed LocalCluster of 2 worker processes reduces mounted
    arrays chunk by chunk (each worker reads its chunks through the mount):
    the same numbers numpy gives from the expected bytes."""
    distributed = pytest.importorskip('distributed', reason='python3-distributed ' + WHY)
    case = get_case('dense_2d_all_types')
    mnt = mount(case.array, case_options(case, tmp_path))
    root = os.path.join(mnt, '__zarr')
    f = case.fields()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()['workers']) == 2
        for name in ['i64', 'u16', 'f64']:
            exp = expected_array(case, name, f[name])
            a = dask_array.from_zarr(root, component=name)
            assert a.numblocks == (6, 4)
            got = client.compute(a.astype('f8').sum(axis=0)).result()
            want = exp.astype('f8').sum(axis=0)
            assert numpy.array_equal(numpy.isnan(got), numpy.isnan(want))
            assert numpy.allclose(got[~numpy.isnan(want)], want[~numpy.isnan(want)]), name
        ds = xarray.open_zarr(root, mask_and_scale=False)
        total = client.compute(ds['i32'].astype('i8').sum()).result()
        assert int(total) == int(expected_array(case, 'i32', f['i32']).astype('i8').sum())
