"""`tgeval compare` on real results: K-sweep, Kendall tau, paired intervals, refusal of mismatches."""

import json
import math

import pytest
import torch

from tgeval.eval.tuning import Tuning
from tgeval import build_catalog, chronological_split, evaluate
from tgeval.cli.program import build_parser
from tgeval.data.synthetic import generate_events
from tgeval.diagnostics.comparison import (
    EventSetMismatchError,
    compare,
    compare_command,
    load_events,
)
from tgeval.diagnostics.time_bins import time_profile
from tgeval.eval.expected import k_sweep
from tgeval.eval.metrics import rank_from_counts
from tgeval.models.heuristics import EdgeBank, Popularity, PreferentialAttachment
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler

KS = (1, 5, 20, 50, 100, None)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    num_nodes = 150
    data = generate_events(2500, num_nodes, seed=3)
    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
    folder = tmp_path_factory.mktemp("compare")
    results, paths = {}, {}
    for name, model in (("edgebank", EdgeBank(num_nodes)), ("pa", PreferentialAttachment(num_nodes)),
                        ("popularity", Popularity(num_nodes))):
        result = evaluate(model, data, split.test, Protocol(num_negatives=10, ties="average"),
                          sampler=UniformSampler(catalog), catalog=catalog, tuning=Tuning(check_state=False))
        results[name] = result
        paths[name] = folder / f"{name}.csv"
        result.save_events(paths[name])
    return results, paths, folder


def test_load_events_round_trip(saved):
    results, paths, _ = saved
    table = load_events(paths["edgebank"])
    direct = results["edgebank"].event_table()
    assert set(table) == set(direct)
    for key, value in direct.items():
        back = table[key]
        if value.dtype == torch.bool or not value.dtype.is_floating_point:
            assert torch.equal(back.to(value.dtype), value), key
        else:
            assert torch.allclose(back, value.double(), rtol=0, atol=0), key
    assert table["above"].dtype == torch.long and table["covered"].dtype == torch.bool


def test_compare_equals_direct_k_sweep_and_intervals(saved):
    results, paths, _ = saved
    tables = {name: load_events(path) for name, path in paths.items()}
    report = compare(tables, ks=KS, ties="average", block=64, seed=1)
    direct = k_sweep({n: r.records for n, r in results.items()}, KS, ties="average")
    assert report["models"] == ["edgebank", "pa", "popularity"]
    assert report["num_events"] == results["edgebank"].records["event"].numel()
    for name in report["models"]:
        assert report["k_sweep"]["mrr"][name] == pytest.approx(direct["mrr"][name], rel=1e-12)
        full = results[name].metrics["all_entity"]["mrr"]["micro"]
        assert report["k_sweep"]["mrr"][name][-1] == pytest.approx(full, rel=1e-9)
    assert report["k_sweep"]["kendall_tau"][-1] == 1.0
    assert report["k_sweep"]["kendall_tau"] == pytest.approx(direct["kendall_tau"], nan_ok=True)
    assert len(report["pairs"]) == 3
    for pair in report["pairs"]:
        rec_a, rec_b = results[pair["a"]].records, results[pair["b"]].records
        rr_a = 1.0 / rank_from_counts(rec_a["above"], rec_a["equal"], ties="average")
        rr_b = 1.0 / rank_from_counts(rec_b["above"], rec_b["equal"], ties="average")
        observed = float(rr_a.double().mean() - rr_b.double().mean())
        assert pair["estimate"] == pytest.approx(observed, abs=1e-12)
        assert pair["low"] <= observed <= pair["high"] and pair["low"] < pair["high"]
        assert pair["n"] == report["num_events"] and pair["method"] == "block_bootstrap"


def test_compare_is_invariant_to_row_order(saved):
    _, paths, _ = saved
    tables = {name: load_events(path) for name, path in paths.items()}
    perm = torch.randperm(tables["pa"]["event"].numel(), generator=torch.Generator().manual_seed(0))
    shuffled = dict(tables, pa={k: v[perm] for k, v in tables["pa"].items()})
    assert compare(shuffled, block=64) == compare(tables, block=64)


def test_mismatched_event_sets_are_refused(saved):
    _, paths, _ = saved
    tables = {name: load_events(path) for name, path in paths.items()}
    short = {k: v[:-5] for k, v in tables["pa"].items()}
    with pytest.raises(EventSetMismatchError, match="'pa'.*5 only in 'edgebank'"):
        compare(dict(tables, pa=short))
    moved = dict(tables["popularity"], event=tables["popularity"]["event"] + 10**6)
    with pytest.raises(ValueError, match="popularity"):
        compare(dict(tables, popularity=moved))
    with pytest.raises(ValueError, match="candidates"):
        compare({"a": tables["pa"], "b": {k: v for k, v in tables["edgebank"].items() if k != "candidates"}})


def test_cli_prints_table_and_writes_json(saved, capsys):
    _, paths, folder = saved
    out = folder / "out" / "compare.json"
    args = build_parser().parse_args(["compare", *(str(p) for p in paths.values()), "--names", "EB,PA,POP",
                                      "--ks", "1,20,full", "--block", "32", "--out", str(out)])
    assert args.handler == ("tgeval.diagnostics.comparison", "compare_command") and compare_command(args) == 0
    text = capsys.readouterr().out
    assert "K=full" in text and "Kendall tau" in text and "EB - PA" in text
    report = json.loads(out.read_text())
    assert report["models"] == ["EB", "PA", "POP"] and report["k_sweep"]["K"] == [1, 20, None]
    assert report["k_sweep"]["kendall_tau"][-1] == 1.0
    assert {(p["a"], p["b"]) for p in report["pairs"]} == {("EB", "PA"), ("EB", "POP"), ("PA", "POP")}
    assert all(p["block"] == 32 for p in report["pairs"])
    assert json.loads(json.dumps(report)) == report  # strict JSON (no NaN)
    with pytest.raises(ValueError, match="--names"):
        compare_command(build_parser().parse_args(["compare", *(str(p) for p in paths.values()), "--names", "A,B"]))


def test_time_profile_on_real_results(saved):
    results, _, _ = saved
    prof = time_profile({"uniform": results["edgebank"]}, bins=20, ties="average")
    assert int(prof.count.sum()) == results["edgebank"].records["event"].numel()
    assert prof.pos_rank_kind == "all_entity"
    ranks = prof.neg_rank["uniform"][prof.count > 0]
    assert bool(torch.isfinite(ranks).all()) and bool(((ranks >= 1) & (ranks <= 11)).all())
    assert not math.isnan(float(prof.pos_rank[prof.count > 0].mean()))


def test_other_catalogs_are_refused(saved):
    from tgeval.diagnostics.comparison import EventSetMismatchError

    _, paths, _ = saved
    first, second = load_events(paths["edgebank"]), load_events(paths["pa"])
    second["candidates"][0] += 1
    with pytest.raises(EventSetMismatchError, match="other candidate sets"):
        compare({"edgebank": first, "pa": second})
