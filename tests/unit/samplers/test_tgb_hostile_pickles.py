"""Hostile TGB pickles: a few bytes that ask for gigabytes (an array, bytes, a scalar, a list of an array, rows
padded to one long row), or an array state numpy would crash on, are refused before anything is allocated; the
restricted unpickler charges every call of the file against twice its size."""

import pickle
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

from tgeval import NegativesFileError
from tgeval.data.io.tgb_negatives import load_tgb_pickle, write_tgb_negatives
from tgeval.samplers.fixed import read_tgb_negatives
from tests.conftest import make_stream

try:
    from numpy._core import multiarray
except ImportError:  # numpy 1
    from numpy.core import multiarray


class Call:
    """Pickles as ``function(*args)``, then ``state`` (what a crafted file holds)."""

    def __init__(self, function, args, state=None):
        self.function, self.args, self.state = function, args, state

    def __reduce__(self):
        return (self.function, self.args) if self.state is None else (self.function, self.args, self.state)


GIB = 2**30
HOSTILE = {
    "an ndarray of 8.9 GiB": (Call(np.ndarray, ((20_000_000, 60),)), r"calls numpy.ndarray itself"),
    "bytes(8e8)": (Call(bytes, (800_000_000,)), r"bytes of 800,000,000 bytes, more than a TGB file of \d+ bytes"),
    "bytearray(8e8)": (Call(bytearray, (800_000_000,)), r"bytearray of 800,000,000 bytes"),
    "an empty array of 1.2 GB": (Call(multiarray._reconstruct, (np.ndarray, (20_000_000, 60), np.dtype("b"))),
                                 r"asks numpy for an array of shape \(20000000, 60\) before its content"),
    "a scalar of 800 MB": (Call(multiarray.scalar, (np.dtype("V800000000"), b"")), r"dtype\('V800000000'\)"),
    "an array state longer than its bytes": (
        Call(multiarray._reconstruct, (np.ndarray, (0,), b"b"), (1, (GIB,), np.dtype("i8"), False, b"\0" * 8)),
        r"gives an array of shape \(1073741824,\) and dtype int64 bytes of 8 bytes, not its 8,589,934,592"),
}


@pytest.mark.parametrize("how", list(HOSTILE))
def test_a_small_file_asking_for_gigabytes_is_refused_before_allocating(tmp_path, how):
    value, message = HOSTILE[how]
    path = tmp_path / "ns.pkl"
    path.write_bytes(pickle.dumps({(0, 1, 2): value}, protocol=4))
    assert path.stat().st_size < 2048
    tracemalloc.start()
    try:
        with pytest.raises(NegativesFileError, match=message):
            load_tgb_pickle(path)
        with pytest.raises(NegativesFileError, match=message):
            read_tgb_negatives(path, make_stream([0], [1], [2]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20


def test_calls_repeated_from_the_memo_are_charged_in_total(tmp_path):
    """One array's 1,000 bytes listed 10,000 times (each call a few bytes of the file) would build 10 million
    objects: a list from an array is refused, and bytes built again and again run out of the file's allowance."""
    row = np.arange(1000, dtype=np.int8)
    path = tmp_path / "ns.pkl"
    path.write_bytes(pickle.dumps({(0, 1, 2): Call(list, (row,))}, protocol=4))
    with pytest.raises(NegativesFileError, match="builds a list from a _CheckedArray"):
        load_tgb_pickle(path)
    chunk = bytes(1000)
    path.write_bytes(pickle.dumps({(0, 1, i): Call(bytes, (chunk,)) for i in range(100)}, protocol=4))
    with pytest.raises(NegativesFileError, match="more than a TGB file of"):
        load_tgb_pickle(path)


def test_an_object_array_state_is_refused_before_numpy_reads_it(tmp_path):
    """numpy allocates an object array's whole size from its state before reading its list (and crashes on a
    shorter list): the state is checked first (in a child process, so a crash fails this test only)."""
    path = tmp_path / "ns.pkl"
    state = (1, (10**9,), np.dtype("O"), False, [1])
    path.write_bytes(pickle.dumps({(0, 1, 2): Call(multiarray._reconstruct, (np.ndarray, (0,), b"b"), state)},
                                  protocol=4))
    script = textwrap.dedent(f"""
        from tgeval import NegativesFileError
        from tgeval.data.io.tgb_negatives import load_tgb_pickle
        try:
            load_tgb_pickle({str(path)!r})
        except NegativesFileError as error:
            print(error)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "builds an array or scalar of dtype dtype('O') (not numbers or text)" in done.stdout


def test_short_rows_are_refused_before_they_are_padded(tmp_path):
    """2,000 keys and one row of 100,000 negatives (an 880 KB file) would pad to 1.6 GB: refused first."""
    keys = range(2000)
    path = tmp_path / "ns.pkl"
    write_tgb_negatives(path, list(keys), [1] * 2000, list(keys), [list(range(100_000))] + [[3]] * 1999)
    tracemalloc.start()
    try:
        with pytest.raises(NegativesFileError, match="1999 of 2000 rows shorter than its 100000 negatives"):
            read_tgb_negatives(path, make_stream(list(keys), [1] * 2000, list(keys)), num_nodes=200_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_the_files_tgb_writes_stay_within_their_allowance(tmp_path, protocol):
    """Keys of numpy scalars and int64 rows, under the protocols that copy their bytes twice (2) or once."""
    table = {(np.int64(s), np.int64(s + 1), np.int64(s)): np.arange(s, s + 50, dtype=np.int64) for s in range(300)}
    path = tmp_path / "ns.pkl"
    path.write_bytes(pickle.dumps(table, protocol=protocol))
    loaded = load_tgb_pickle(path)
    assert loaded.keys() == table.keys() and all(np.array_equal(loaded[key], table[key]) for key in table)
