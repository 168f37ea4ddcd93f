"""``tgeval.audit``: every reference model passes, and each model of a zoo of leaky ones fails with the check
that names its leak (whole-stream statistics at construction, a window cut at the stream's end, scores normalised
over the candidates of a call, history in a plain dict or in a class attribute, a score that writes state, an
exact-history model that sees the whole batch)."""

import json

import pytest
import torch

import tgeval
from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tgeval.diagnostics.leak_audit import CHECKS, audit
from tgeval.models import registry
from tgeval.models.base import TemporalLinkModel
from tgeval.models.heuristics import EdgeBank
from tgeval.data.sorted_keys import Occurrences
from tests.helpers import readme_pyg_tgn, small_neural_model, snap_text

N = 80
DATA = generate_events(3000, N, seed=1)
SPLIT = tgeval.chronological_split(DATA)

pytestmark = pytest.mark.usefixtures("one_thread")


class Degree(TemporalLinkModel):
    """Honest: a destination's degree over the events fed through ``update``."""

    def __init__(self, data=None):
        super().__init__(N)
        self.register_buffer("degree", torch.zeros(N))

    def score(self, src, dst, t):
        return self.degree[dst]

    def update(self, batch):
        self.degree += torch.bincount(batch.dst, minlength=N).float()


class WholeStreamDegree(Degree):
    """Counts every destination of the stream it was built with: reads the future."""

    def __init__(self, data):
        super().__init__()
        self.degree = torch.bincount(data.dst, minlength=N).float()

    def update(self, batch):
        pass


class StreamEndWindow(Degree):
    """Counts only events in the last half of the stream's span, the span read at construction."""

    def __init__(self, data):
        super().__init__()
        self.since = float(data.t[-1] - (data.t[-1] - data.t[0]) / 2)

    def update(self, batch):
        recent = batch.t.double() > self.since
        self.degree += torch.bincount(batch.dst[recent], minlength=N).float()


class BlockNormalised(Degree):
    """Centres the scores of each call: a candidate's score depends on the others scored with it."""

    def score(self, src, dst, t):
        s = self.degree[dst]
        return s - s.mean()


class DictState(Degree):
    def __init__(self, data=None):
        super().__init__()
        self.seen = {}

    def score(self, src, dst, t):
        return torch.tensor([float(self.seen.get((u, v), 0)) for u, v in zip(src.tolist(), dst.tolist())])

    def update(self, batch):
        for u, v in zip(batch.src.tolist(), batch.dst.tolist()):
            self.seen[(u, v)] = 1


class ClassAttributeState(Degree):
    seen = set()  # shared by every instance: the next model starts with the last one's history

    def score(self, src, dst, t):
        return torch.tensor([float((u, v) in self.seen) for u, v in zip(src.tolist(), dst.tolist())])

    def update(self, batch):
        self.seen.update(zip(batch.src.tolist(), batch.dst.tolist()))


class ScoreWritesState(Degree):
    def score(self, src, dst, t):
        self.degree[dst] += 1
        return self.degree[dst]


class WholeBatchEdgeBank(EdgeBank):
    """Exact history that sees every event of the batch, the later ones too."""

    def index_earlier(self, batch):
        return Occurrences(self._key(batch.src, batch.dst), torch.full_like(batch.t, -2**62), times_sorted=True)


LEAKY = [(WholeStreamDegree, "no_future"), (StreamEndWindow, "no_future"),
         (BlockNormalised, "candidate_independence"), (DictState, "state"), (ClassAttributeState, "state"),
         (ScoreWritesState, "state"), (lambda data: WholeBatchEdgeBank(N), "no_future")]


class WholeStreamWeight(Degree):
    """Honest degrees, plus the sum of a per-event field over the stream it was built with: reads the future
    through a field other than the endpoints and the message."""

    def __init__(self, data):
        super().__init__()
        self.total = float(data.weight.sum())

    def score(self, src, dst, t):
        return self.degree[dst] + self.total


def test_a_future_read_through_any_per_event_field_fails_no_future():
    data = DATA.clone()
    data.weight = torch.rand(data.num_events, generator=torch.Generator().manual_seed(0))
    report = audit(WholeStreamWeight, data, SPLIT, checks=["no_future"])
    assert report.checks["no_future"].passed is False, str(report)


@pytest.mark.parametrize("build, leak", LEAKY, ids=lambda x: getattr(x, "__name__", str(x)))
def test_a_leaky_model_fails_the_check_that_names_its_leak(build, leak):
    if build is ClassAttributeState:
        ClassAttributeState.seen = set()
    report = audit(build, DATA, SPLIT)
    assert not report.passed
    assert report.checks[leak].passed is False, str(report)
    if leak == "state" and report.checks["no_future"].passed is None:  # the reference replay failed
        assert "not run" in report.checks["no_future"].detail
    failed = report.checks[leak]
    assert failed.detail
    assert failed.offence is None or {"event", "src", "t", "candidate", "scores"} <= set(failed.offence)


def test_the_honest_versions_pass():
    for build in (Degree, lambda data: EdgeBank(N)):
        report = audit(build, DATA, SPLIT)
        assert report.passed, str(report)
        assert [name for name, r in report.checks.items() if r.passed] == list(CHECKS[:-1])
        assert report.checks["batch_size"].passed is None and report.checks["batch_size"].value is not None


@pytest.mark.parametrize("name", registry.names("heuristic"))
def test_every_heuristic_passes(name):
    report = audit(lambda data: registry.build(name, num_nodes=N), DATA, SPLIT)
    assert report.passed, str(report)


@pytest.mark.parametrize("name", ["popularity", "popularity-global", "popularity-local"])
def test_decayed_popularity_passes(name):
    """Non-integer float64 scores (a half-life) are compared as float64 in every arm, never rounded to float32."""
    report = audit(lambda data: registry.build(name, num_nodes=N, half_life=3.0), DATA, SPLIT)
    assert report.passed, str(report)


@pytest.mark.parametrize("name", registry.names("neural"))
def test_every_neural_model_passes(name):
    report = audit(lambda data: small_neural_model(name, N), DATA, SPLIT)
    assert report.passed, str(report)


def test_the_guides_pyg_tgn_passes():
    PygTGN, PygTGNConfig = readme_pyg_tgn()
    report = audit(lambda data: PygTGN(PygTGNConfig(N, msg_dim=1, dim=8, num_neighbors=3)), DATA, SPLIT)
    assert report.passed, str(report)


def test_the_report_is_json_and_names_its_protocol():
    report = audit(Degree, DATA, SPLIT, checks=["no_future"], seed=3)
    payload = json.loads(report.to_json())
    assert payload["kind"] == "tgeval-audit" and payload["passed"] is True and list(payload["checks"]) == ["no_future"]
    manifest = payload["manifest"]
    assert manifest["seed"] == 3 and manifest["data"].startswith("sha256:") and len(manifest["cut_times"]) >= 1
    assert manifest["segment"] == {"name": "test", "start": SPLIT.test.start, "end": SPLIT.test.end}
    assert manifest["catalog"]["kind"] == "train" and manifest["ties"] == "average" and manifest["batch_size"] == 200
    with pytest.raises(tgeval.ProtocolError, match="unknown audit checks"):
        audit(Degree, DATA, SPLIT, checks=["future"])


def test_the_command_exits_0_when_every_check_passes_and_1_when_one_fails(tmp_path, capsys, monkeypatch):
    path = tmp_path / "events.txt"
    path.write_text(snap_text(DATA))
    assert main(["audit", str(path), "--format", "snap", "--model", "edgebank", "--out", str(tmp_path / "a.json")]) == 0
    out = capsys.readouterr().out
    assert all(f" {name}: " in out for name in CHECKS) and "audit passed" in out
    assert json.loads((tmp_path / "a.json").read_text())["passed"] is True
    (tmp_path / "leaky_models.py").write_text(
        "import torch\nfrom tgeval.models.base import TemporalLinkModel\n\n"
        "class Whole(TemporalLinkModel):\n"
        "    def __init__(self, data):\n"
        "        super().__init__(int(data.dst.max()) + 1)\n"
        "        self.register_buffer('degree', torch.bincount(data.dst).float())\n"
        "    def score(self, src, dst, t):\n"
        "        return self.degree[dst]\n"
        "    def update(self, batch):\n"
        "        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["audit", str(path), "--format", "snap", "--model", "leaky_models:Whole",
                 "--checks", "no_future"]) == 1
    assert "FAIL     no_future" in capsys.readouterr().out
    assert main(["audit", str(path), "--format", "snap", "--model", "nosuch:Model"]) == 2
    assert "ModelCapabilityError" in capsys.readouterr().err


def test_the_html_report_shows_the_audits_beside_the_results(tmp_path):
    from tgeval.diagnostics.report import build_report

    catalog = tgeval.build_catalog(DATA, "train", train_end=SPLIT.train.end)
    tgeval.evaluate(EdgeBank(N), DATA, SPLIT.test, tgeval.Protocol(num_negatives=0), catalog=catalog).save(
        tmp_path / "edgebank.json")
    (tmp_path / "edgebank.audit.json").write_text(audit(lambda data: EdgeBank(N), DATA, SPLIT).to_json())
    (tmp_path / "leaky.audit.json").write_text(audit(WholeStreamDegree, DATA, SPLIT, checks=["no_future"]).to_json())
    page = build_report(tmp_path)
    section = page[page.index("<h2>Leak audits</h2>"):]
    assert "edgebank.audit.json" in section and "leaky.audit.json" in section and "FAILED" in section
    assert "Files not reported" not in page  # the audits are not taken for broken results


def test_a_build_that_raises_fails_the_state_check_and_runs_no_other():
    def broken(data):
        raise RuntimeError("no weights here")

    report = audit(broken, DATA, SPLIT)
    assert not report.passed and report.checks["state"].passed is False
    assert "build(data) raised RuntimeError: no weights here" in report.checks["state"].detail
    assert all(r.passed is None and r.detail.startswith("not run") for n, r in report.checks.items() if n != "state")
