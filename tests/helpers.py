"""Small real models for tests (no mocks): a fixed score table, stateless; small neural models; the
README's code blocks (the PyG-built TGN of *Your own PyG model* has its only source there)."""

import re
from pathlib import Path

from tgeval.models import TGN, DyRep, GraphMixer
from tgeval.models.base import TemporalLinkModel

#: widths that keep the neural models fast in tests (DyRep's memory must be even: two heads)
SMALL_WIDTHS = {
    TGN: dict(memory_dim=8, time_dim=4, embedding_dim=8, num_neighbors=3),
    DyRep: dict(memory_dim=8, time_dim=4, num_neighbors=3),
    GraphMixer: dict(num_neighbors=3, time_dim=4, hidden_dim=8, embedding_dim=8, num_layers=1),
}
NEURAL = {"tgn": TGN, "dyrep": DyRep, "graphmixer": GraphMixer}


def small_neural_model(kind, num_nodes, msg_dim=1, subclass=None, **options):
    """``kind`` (a class of :data:`SMALL_WIDTHS` or its name) with small widths; ``options``
    override them or add others; ``subclass``: a subclass of ``kind`` to build instead."""
    cls = NEURAL.get(kind, kind)
    return (subclass or cls)(num_nodes, msg_dim, **{**SMALL_WIDTHS[cls], **options})


README = Path(__file__).resolve().parents[1] / "README.md"


def readme_python_blocks():
    """The source of every fenced Python block of the README, in order."""
    return re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.S | re.M)


def readme_pyg_tgn():
    """The class ``PygTGN`` of the README's *Your own PyG model*, run from the block that defines it."""
    block = next(code for code in readme_python_blocks() if "class PygTGN" in code)
    namespace: dict = {}
    exec(compile(block, f"{README}:PygTGN", "exec"), namespace)
    return namespace["PygTGN"]


class StatelessModel(TemporalLinkModel):
    """A model without history: nothing to update (state discovery finds no state)."""

    def update(self, batch):
        pass


class TableModel(StatelessModel):
    """Scores ``table[src, dst]``: a stateless scorer with controllable ties."""

    def __init__(self, table):
        super().__init__(table.size(0))
        self.register_buffer("table", table)

    def score(self, src, dst, t):
        return self.table[src, dst]


def brute_force_counts(score_fn, src, dst, t, catalog_items, available_from=None, directed=True):
    """Per-event (above, equal, num_candidates) by looping over every candidate."""
    out = []
    events = list(zip(src.tolist(), dst.tolist(), t.tolist()))
    for u, v, s in events:
        simultaneous = {b for a, b, w in events if a == u and w == s}
        if not directed:
            simultaneous |= {a for a, b, w in events if b == u and w == s}
        p = float(score_fn(u, v, s))
        above = equal = count = 0
        for k, c in enumerate(catalog_items.tolist()):
            if available_from is not None and not available_from[k] < s:
                continue
            if c == u or c in simultaneous:
                continue
            count += 1
            q = float(score_fn(u, c, s))
            above += q > p
            equal += q == p
        out.append((above, equal, count))
    return out


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (for a test's process group)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
