import importlib
import os
from pathlib import Path

import pytest
import torch
from torch_geometric.data import TemporalData

#: the shared datasets next to the repository: the session's datasets folder unless $TGEVAL_DATA_DIR names one
SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
if not os.environ.get("TGEVAL_DATA_DIR"):
    os.environ["TGEVAL_DATA_DIR"] = str(SHARED_DATASETS)

importlib.import_module("tests.toy_model")  # registers the model "toy": the contract tests cover it

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (CI runs them; without it they are deselected and counted)")


def pytest_collection_modifyitems(config, items):
    """Without ``--slow``, tests marked ``slow`` are deselected, so pytest's summary counts them."""
    if config.getoption("--slow"):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: with two OpenMP threads on shared cores, every small op waits for a thread
    hand-off (milliseconds each); one thread runs such tests many times faster."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(params=DEVICES)
def device(request):
    return torch.device(request.param)


def require_dataset(name):
    """The file of the shared dataset ``name`` (:func:`tgeval.data.datasets.dataset_path`), or skip the test
    saying where it was looked for and how to provide it."""
    from tgeval.data.datasets import dataset_path
    from tgeval.errors import InputPathError

    try:
        return dataset_path(name)
    except InputPathError as missing:
        pytest.skip(f"shared dataset {name!r} is absent: {missing}")


def make_stream(src, dst, t, **extra):
    """Events as ``TemporalData``, with ``position = arange(E)`` (a batch at the start of a stream,
    as ``TimestampBatchLoader`` yields it; samplers key their draws on it)."""
    src = torch.as_tensor(src, dtype=torch.long)
    extra.setdefault("position", torch.arange(src.numel()))
    return TemporalData(src=src, dst=torch.as_tensor(dst, dtype=torch.long), t=torch.as_tensor(t, dtype=torch.long),
                        **extra)
