import pytest
import torch
from torch_geometric.data import TemporalData

from tgeval import TemporalDataError, sort_by_time, validate
from tests.conftest import make_stream


def test_canonical_output_and_input_untouched():
    data = make_stream([0, 1], [1, 2], [1, 2], msg=torch.zeros(2, 3))
    data.src = data.src.int()
    out = validate(data)
    assert out.src.dtype == torch.long and out.t.dtype == torch.long
    assert data.src.dtype == torch.int32  # not modified in place


def test_float_times_become_float64():
    data = TemporalData(src=torch.tensor([0, 1]), dst=torch.tensor([1, 0]), t=torch.tensor([0.5, 1.5], dtype=torch.float32))
    assert validate(data).t.dtype == torch.float64


def test_unsorted_raises_with_fix_and_sort_is_stable():
    data = make_stream([0, 1, 2, 3], [1, 2, 3, 0], [3, 1, 3, 1], y=torch.tensor([10, 11, 12, 13]))
    with pytest.raises(TemporalDataError, match=r"t\[1\]=1 follows t\[0\]=3.*sort=True"):
        validate(data)
    out = validate(data, sort=True)
    assert out.t.tolist() == [1, 1, 3, 3]
    assert out.src.tolist() == [1, 3, 0, 2]  # stable: file order kept inside a group
    assert out.y.tolist() == [11, 13, 10, 12]  # every per-event field follows
    assert sort_by_time(data).src.tolist() == [1, 3, 0, 2]


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_time(bad):
    data = TemporalData(src=torch.tensor([0, 1]), dst=torch.tensor([1, 0]), t=torch.tensor([0.0, bad]))
    with pytest.raises(TemporalDataError, match=r"`t` must be finite.*t\[1\]"):
        validate(data)


def test_negative_ids():
    with pytest.raises(TemporalDataError, match=r"`dst` must hold node ids >= 0.*dst\[1\]=-4.*remap"):
        validate(make_stream([0, 1], [1, -4], [0, 1]))


def test_float_ids_rejected():
    data = TemporalData(src=torch.tensor([0.0, 1.0]), dst=torch.tensor([1, 0]), t=torch.tensor([0, 1]))
    with pytest.raises(TemporalDataError, match="integer node ids"):
        validate(data)


def test_ids_beyond_num_nodes():
    with pytest.raises(TemporalDataError, match=r"< num_nodes=3.*src\[1\]=5"):
        validate(make_stream([0, 5], [1, 2], [0, 1]), num_nodes=3)


def test_length_mismatch():
    data = TemporalData(src=torch.tensor([0, 1, 2]), dst=torch.tensor([1, 0]), t=torch.tensor([0, 1]))
    with pytest.raises(TemporalDataError, match="equal lengths"):
        validate(data)


def test_missing_field_and_empty_stream():
    with pytest.raises(TemporalDataError, match="`t` is missing"):
        validate(TemporalData(src=torch.tensor([0]), dst=torch.tensor([1])))
    with pytest.raises(TemporalDataError, match="empty"):
        validate(make_stream([], [], []))


def test_msg_rows_and_nan():
    with pytest.raises(TemporalDataError, match=r"one row per event \[2, d\]"):
        validate(make_stream([0, 1], [1, 0], [0, 1], msg=torch.zeros(3, 2)))
    msg = torch.zeros(2, 2)
    msg[1, 0] = float("nan")
    with pytest.raises(TemporalDataError, match="row 1 holds NaN"):
        validate(make_stream([0, 1], [1, 0], [0, 1], msg=msg))


def test_not_temporal_data():
    with pytest.raises(TypeError, match="TemporalData"):
        validate({"src": torch.tensor([0])})
