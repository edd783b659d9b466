"""test_corpus_cat.py: every expected file of every corpus case, byte for byte, through tiledbfs-cat (the contract without FUSE)."""
import subprocess

from conftest import case_options, run_cat


def describe(path, got, exp, proc):
    if proc is None:
        return f'{path}: timed out'
    if proc.returncode != 0:
        err = proc.stderr.decode(errors='replace').strip()[:300]
        return f'{path}: exit {proc.returncode}: {err}'
    if len(got) != len(exp):
        return f'{path}: {len(got)} bytes, expected {len(exp)}'
    first = next(i for i in range(len(exp)) if got[i] != exp[i])
    return f'{path}: {len(exp)} bytes, differ from byte {first}'


def test_cat_matches_expected(case, cat_prog, tmp_path):
    opts = case_options(case, tmp_path)
    assert case.expected_paths, f'{case.name}: case.json lists no expected files'
    fails = []
    for path in case.expected_paths:
        exp = case.expected(path)
        try:
            proc = run_cat(cat_prog, case.array, path, opts)
        except subprocess.TimeoutExpired:
            fails.append(describe(path, None, exp, None))
            continue
        assert proc.returncode >= 0, f'{path}: tiledbfs-cat killed by signal {-proc.returncode}'
        if proc.returncode != 0 or proc.stdout != exp:
            fails.append(describe(path, proc.stdout, exp, proc))
    assert not fails, (f'{case.name}: {len(fails)} of {len(case.expected_paths)} files differ:\n  '
                       + '\n  '.join(fails))
