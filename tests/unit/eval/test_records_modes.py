"""evaluate(tuning=Tuning(records=...)): the result keeps every record, the per-event columns or none, with the same
numbers; without the negative ids their checksum is taken window by window and equals the whole one."""

from __future__ import annotations

import pytest
import torch

from tgeval.eval.tuning import Tuning
from tgeval import Protocol, build_catalog, chronological_split, evaluate
from tgeval.data.synthetic import generate_events
from tgeval.eval import engine
from tgeval.models.heuristics import EdgeBank
from tgeval.samplers import HistoricalSampler, UniformSampler, birth_death, read_tgb_negatives, write_tgb_negatives
from tgeval.samplers.base import negatives_checksum

DATA = generate_events(num_events=1_200, num_nodes=60, seed=5)
SPLIT = chronological_split(DATA)
N = int(torch.maximum(DATA.src.max(), DATA.dst.max())) + 1
CATALOG = build_catalog(DATA, "train", train_end=SPLIT.train.end)


def tgb_file_sampler(tmp_path):
    """A TGB file with ragged rows (padded and masked) and collisions (masked)."""
    test = DATA[SPLIT.test.start:SPLIT.test.end]
    g = torch.Generator().manual_seed(0)
    rows = [torch.randint(0, N, (int(torch.randint(1, 6, (1,), generator=g)),), generator=g).tolist()
            for _ in range(test.num_events)]
    path = tmp_path / "neg.pkl"
    write_tgb_negatives(path, test.src, test.dst, test.t, rows)
    return read_tgb_negatives(path, test, short="allow", num_nodes=N)


SAMPLERS = {
    "uniform": lambda tmp_path: UniformSampler(CATALOG),
    "historical": lambda tmp_path: HistoricalSampler(N, catalog=CATALOG),  # has history: drawn batch by batch
    "tgb file": tgb_file_sampler,
    "birth-death edges": lambda tmp_path: birth_death("HE", DATA, float(DATA.t[SPLIT.test.start]), num_nodes=N),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_modes_give_the_same_numbers_and_checksum(name, tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "WINDOW_QUERIES", 64)  # many windows: the checksum is fed in many parts
    sampler = SAMPLERS[name](tmp_path)
    k = sampler.num_negatives if hasattr(sampler, "stored_num_negatives") else 3
    results = {mode: evaluate(EdgeBank(N), DATA, SPLIT.test, Protocol(num_negatives=k, batch_size=7), sampler=sampler,
                              catalog=CATALOG, tuning=Tuning(records=mode)) for mode in ("all", "events", "none")}
    full = results["all"].records
    whole = negatives_checksum(full["src"], full["dst"], full["t"], full["neg"], full.get("neg_src"),
                               full.get("neg_mask"))
    assert results["all"].manifest["negatives_checksum"] == whole
    for mode in ("events", "none"):
        assert results[mode].metrics == results["all"].metrics
        assert results[mode].manifest["negatives_checksum"] == whole
    assert results["none"].records is None
    assert not {"neg", "neg_src", "neg_mask", "neg_score"} & set(results["events"].records)
    for column, value in results["all"].event_table().items():
        torch.testing.assert_close(results["events"].event_table()[column], value, rtol=0, atol=0, equal_nan=True)
    results["all"].save_events(tmp_path / "all.csv")
    results["events"].save_events(tmp_path / "events.csv")
    assert (tmp_path / "all.csv").read_bytes() == (tmp_path / "events.csv").read_bytes()


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="records must be"):
        evaluate(EdgeBank(N), DATA, SPLIT.test, sampler=UniformSampler(CATALOG), tuning=Tuning(records="some"))


def test_the_events_csv_is_the_same_in_any_chunks(tmp_path, monkeypatch):
    import tgeval.eval.result as result_module

    result = evaluate(EdgeBank(N), DATA, SPLIT.test, Protocol(num_negatives=2), sampler=UniformSampler(CATALOG),
                      catalog=CATALOG, tuning=Tuning(records="events"))
    whole = result._events_csv()
    monkeypatch.setattr(result_module, "CSV_ROWS", 7)
    assert result._events_csv() == whole
    lines = whole.decode().splitlines()
    assert len(lines) == SPLIT.test.num_events + 1 and lines[0].startswith("event,batch,src,dst,t,score,stratum")
