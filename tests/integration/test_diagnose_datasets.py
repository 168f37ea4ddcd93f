"""``diagnose`` on every shared research dataset: plots non-empty, surprise in [0, 1] (skips when absent)."""

import json

import pytest

from tgeval.data.datasets import load_dataset
from tgeval.cli.diagnose import diagnose

from tests.conftest import require_dataset

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# name -> (directed, bipartite)
DATASETS = {"uci": (True, False), "enron": (True, False), "highschool": (False, False), "wikipedia": (True, True)}


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_diagnose_dataset(name, tmp_path):
    require_dataset(name)
    data, info = load_dataset(name)
    directed, bipartite = DATASETS[name]
    assert info.directed is directed
    report = diagnose(data, tmp_path, directed=info.directed, name=name)
    assert report["data"]["bipartite"] is bipartite
    assert json.loads((tmp_path / "diagnose.json").read_text()) == report
    for row in [report["lifetimes"], *report["surprise_table"]]:
        for kind in ("nodes", "pairs"):
            assert 0.0 <= row[kind]["surprise"] <= 1.0
            total = row[kind]["historical"] + row[kind]["overlap"] + row[kind]["inductive"]
            assert total > 0
    # every node is in exactly one class whatever the split: the class totals do not depend on the ratio
    assert len({row["nodes"]["historical"] + row["nodes"]["overlap"] + row["nodes"]["inductive"]
                for row in report["surprise_table"]}) == 1
    for file in ("birth_death_nodes.png", "birth_death_pairs.png", "novelty.png"):
        blob = (tmp_path / file).read_bytes()
        assert blob.startswith(PNG_MAGIC) and len(blob) > 5000
