"""Small real models for tests (no mocks): a fixed score table, stateless; small neural models; the
code blocks of the README and the guide (the PyG-built TGN of the guide's *Your own PyG model* has its only
source there)."""

from contextlib import contextmanager
from pathlib import Path

from tgeval.models import registry
from tgeval.models.base import TemporalLinkModel, pairwise_scorer
from tgeval.stream.state import _ADAPTERS, StateAdapter, register_state_adapter

from tests.markdown_blocks import python_blocks


def small_neural_model(kind, num_nodes, msg_dim=1, subclass=None, node_features=None, **options):
    """The registered neural model ``kind`` (its name or class) with its registry ``test_config``;
    ``options`` override config fields or add others; ``subclass``: a subclass of ``kind`` to
    build instead; ``node_features``: passed to the constructor (GraphMixer)."""
    name = kind if isinstance(kind, str) else next(
        n for n in registry.names("neural") if registry.entry(n).model_class() is kind)
    entry = registry.entry(name)
    config = entry.config(num_nodes=num_nodes, msg_dim=msg_dim, **{**entry.test_config, **options})
    cls = subclass or entry.model_class()
    return cls(config) if node_features is None else cls(config, node_features=node_features)


README = Path(__file__).resolve().parents[1] / "README.md"
PYG_MODELS_PAGE = README.parent / "docs" / "guide" / "pyg-models.md"


def guide_models() -> dict:
    """The model and config classes the guide's *Your own PyG model* defines (``PygTGN`` and its variants
    ``GatedMeanTGN`` and ``MemoryOnly``), from the blocks that define them, run in order in one namespace."""
    namespace: dict = {"__name__": "guide_models"}
    for i, code in enumerate(python_blocks(PYG_MODELS_PAGE)):
        if "\nclass " in f"\n{code}":
            exec(compile(code, f"{PYG_MODELS_PAGE}:block{i + 1}", "exec"), namespace)
    return {name: value for name, value in namespace.items() if isinstance(value, type)
            and value.__module__ == "guide_models"}


def readme_pyg_tgn():
    """The classes ``PygTGN`` and ``PygTGNConfig`` of the guide's *Your own PyG model* (:func:`guide_models`)."""
    classes = guide_models()
    return classes["PygTGN"], classes["PygTGNConfig"]


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

    def candidate_scorer(self, src, t, candidates):  # a lookup per pair: pair by pair is its fast path
        return pairwise_scorer(self.score, src, t, candidates)


def brute_force_counts(score_fn, src, dst, t, catalog_items, available_from=None, directed=True, scored=None):
    """Per-event (above, equal, num_candidates) by looping over every candidate; ``scored``: the
    catalog positions that count towards above / equal (``None``: all; candidates are counted
    either way)."""
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
            if scored is not None and k not in scored:
                continue
            q = float(score_fn(u, c, s))
            above += q > p
            equal += q == p
        out.append((above, equal, count))
    return out



def assert_matches_reference(rec, data, reference, catalog_items, name):
    """Every recorded score of ``rec`` (a result's records: positives and sampled negatives) and every
    all-entity count equals ``reference(events, u, v, t)``, a brute force over ``data``'s events."""
    events = list(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()))
    for i, (u, v, t) in enumerate(zip(rec["src"].tolist(), rec["dst"].tolist(), rec["t"].tolist())):
        assert rec["score"][i].item() == reference(events, u, v, t), (name, i)
        for q, s in zip(rec["neg"][i].tolist(), rec["neg_score"][i].tolist()):
            assert s == reference(events, u, q, t), (name, i, q)
    expected = brute_force_counts(lambda u, c, s: reference(events, u, c, s), rec["src"], rec["dst"], rec["t"],
                                  catalog_items)
    assert [(a, e) for a, e, _ in expected] == list(zip(rec["above"].tolist(), rec["equal"].tolist())), name


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (for a test's process group)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sample_replay(sampler, data, k, seed, batch_size):
    """Every timestamp batch's negatives (then the batch is observed), as the online engine draws
    them: a list of :class:`~tgeval.samplers.base.Negatives`, or the ``SamplerError`` of a batch."""
    import torch

    from tgeval.errors import SamplerError
    from tgeval.stream.loader import TimestampBatchLoader

    data = data.clone()
    data.position = torch.arange(data.num_events)
    out = []
    for batch in TimestampBatchLoader(data, batch_size):
        try:
            out.append(sampler.sample(batch, k, torch.Generator().manual_seed(seed)))
        except SamplerError as error:
            out.append(error)
        sampler.observe(batch)
    return out


def snap_text(data) -> str:
    """``data`` as the lines of a SNAP edge list (``src dst t``), for tests of the file readers and the CLI."""
    return "".join(f"{u} {v} {t}\n" for u, v, t in zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()))


@contextmanager
def registered_adapter(cls, **functions):
    """A :class:`~tgeval.stream.state.StateAdapter` of ``functions`` (``view``, ``load``, ``reset``) registered for
    ``cls`` while inside, so no test leaves it registered for the next."""
    register_state_adapter(cls, StateAdapter(**functions))
    try:
        yield
    finally:
        del _ADAPTERS[cls]


def fake_distribution(folder, module: str, source: str, group: str, entry: str) -> Path:
    """An installed distribution in ``folder`` (put it on ``sys.path``): the module ``module`` with ``source`` and a
    ``*.dist-info`` declaring it as the entry point ``entry`` of ``group``; returns its ``entry_points.txt``."""
    folder = Path(folder)
    (folder / f"{module}.py").write_text(source)
    info = folder / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry} = {module}\n")
    return info / "entry_points.txt"


def refusing_catalog_scoring(model):
    """``model`` with a candidate scorer that raises: an all-entity pass must count its ranks (``catalog_counts``),
    never score the catalog (the engine's chunked path calls ``candidate_scorer``)."""
    def refuse(src, t, candidates):
        raise AssertionError(f"{type(model).__name__} scored the catalog instead of counting")
    model.candidate_scorer = refuse
    return model
