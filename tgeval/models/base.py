"""The interface every temporal link model implements (docs/protocol.md §6, §8).

A model scores candidate links ``(src, dst, t)`` from its current state without changing
it, and ingests observed positive events with :meth:`update`. The replay engine
(:mod:`tgeval.eval.engine`) owns the order score -> record -> update; models never update
themselves while scoring.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Union

import torch
from torch import Tensor, nn
from torch_geometric.data import TemporalData

from tgeval.core.compat import tensor_version
from tgeval.data.catalog import Catalog
from tgeval.errors import (ModelCapabilityError, ModelConfigError, ModelOutputError, ProtocolError,
                           TemporalDataError)
from tgeval.models.capabilities import Capabilities
from tgeval.stream.state import State, detach_history, initial_buffers, reset_of, restore_into, snapshot_of

__all__ = ["TemporalLinkModel", "CandidateScorer", "pairwise_scorer", "embedding_scorer",
           "scores_pair_by_pair", "time_store", "check_node_ids", "check_model", "checked_scores", "score_of"]

#: ``scorer(events, candidates) -> [b, c]`` for a slice of a batch's events and a slice (or,
#: under the approximate pre-filter, an int64 tensor of positions) of the candidate list given
#: to :meth:`TemporalLinkModel.candidate_scorer`.
CandidateScorer = Callable[[slice, Union[slice, Tensor]], Tensor]


class TemporalLinkModel(nn.Module):
    """Base class of tgeval's models (heuristic and neural) and of your own.

    Subclasses implement :meth:`score` and :meth:`update`. The state methods
    (:meth:`snapshot`, :meth:`restore`, :meth:`reset_state`) default to **state discovery**
    (:mod:`tgeval.stream.state`): every registered buffer of every submodule, PyG's ``TGNMemory`` and
    ``LastNeighborLoader`` (found among submodules and plain attributes), tgeval's stateful
    modules, and any class with a registered state adapter; the scoring guard watches the same
    parts. Override them only for state kept elsewhere. What else the engine may rely on is
    declared in :attr:`capabilities`; the table in docs/guide/pyg-models.md ("Capabilities") says
    which capability makes the engine call which hook (:meth:`within_batch`,
    :meth:`index_earlier`) and which hooks are optional (:meth:`candidate_scorer`,
    :meth:`catalog_counts`, :meth:`candidate_prior`). A model with ``embed(nodes)`` and
    ``decode(z_src, z_dst)`` gets a blockwise candidate scorer derived from them.

    ``model(src, dst, t)`` is :meth:`score`.

    Args:
        num_nodes: exclusive upper bound of node ids.
    """

    #: what the engine may rely on beyond ``score`` and ``update`` (see :class:`Capabilities`);
    #: a subclass declares its own, on the class or, when it depends on the configuration, in ``__init__``
    capabilities: Capabilities = Capabilities()
    #: whether the class keeps the default (discovered) state methods (computed per subclass)
    _state_discovery: bool = True
    #: the :meth:`~tgeval.training.checkpoint.Checkpoint.describe` of the checkpoint the model was
    #: loaded from (training spec, data fingerprint, epoch, sampler counts), recorded in the manifest
    #: of every result of it; ``None`` for a model built here (and once ``fit`` trains it further)
    checkpoint_record: Optional[dict] = None
    #: inside :meth:`within_batch`: what :meth:`index_earlier` made of the batch; ``None`` outside
    earlier: Any = None

    def __init__(self, num_nodes: int) -> None:
        super().__init__()
        if num_nodes < 1:
            raise ModelConfigError(f"num_nodes must be >= 1, got {num_nodes}.")
        self.num_nodes = int(num_nodes)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Record whether the subclass keeps the discovered state, fold a capability it still sets as a class
        attribute of its old name (``exact_history = True``) into :attr:`capabilities` with a
        ``DeprecationWarning``, and capture right after construction the initial values of its buffers (what
        the default :meth:`reset_state` returns to) and its parameters with their in-place versions
        (:meth:`as_built` compares with them)."""
        super().__init_subclass__(**kwargs)
        cls._state_discovery = cls.snapshot is TemporalLinkModel.snapshot
        _fold_capability_attributes(cls)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def __init__(self: TemporalLinkModel, *args: Any, **kw: Any) -> None:
            init(self, *args, **kw)
            if type(self).__init__ is not __init__:
                return  # a base class's __init__: the most derived class has not finished building
            self.mark_as_built()
            if type(self).reset_state is TemporalLinkModel.reset_state:
                self._initial_buffers = initial_buffers(self)

        cls.__init__ = __init__  # type: ignore[assignment]

    def as_built(self) -> bool:
        """Whether the model has parameters and none changed since it was built: each is the same
        tensor with the same in-place version (an optimizer step, ``load_state_dict`` and
        ``load_checkpoint`` all write in place), or it was loaded from a checkpoint saved so.
        :func:`~tgeval.evaluate` then warns that it measures the weights of its construction."""
        initial = getattr(self, "_initial_parameters", None)
        now = _parameter_versions(self)
        return bool(initial) and len(now) == len(initial) and all(
            p is q and version == then for (p, version), (q, then) in zip(now, initial))

    def mark_as_built(self) -> None:
        """Take the parameters as they are now as the ones the model was built with (done after
        construction, and for a checkpoint of a model that was never trained)."""
        self._initial_parameters = _parameter_versions(self)

    def forward(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        """:meth:`score` (every PyG module is callable)."""
        return self.score(src, dst, t)

    # -- scoring (must not change state) ------------------------------------------------
    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        """Scores of links: float ``[B]`` for int64 ``src``, ``dst`` and ``t`` ``[B]``.

        Higher means more likely. Uses only the current state (history strictly before
        the batch being evaluated) and never modifies it; inside :meth:`within_batch`, a model
        with ``capabilities.exact_history`` also uses the batch's events strictly before ``t[i]``.
        """
        raise NotImplementedError

    @contextmanager
    def within_batch(self, batch: TemporalData) -> Iterator[None]:
        """Score from the state plus the events of ``batch`` (time-sorted) strictly before each
        query's time, for models with ``capabilities.exact_history`` (or, in their neighbour lists,
        ``batch_neighbors``): :attr:`earlier` holds :meth:`index_earlier` of ``batch`` inside; the
        state does not change."""
        capabilities = self.capabilities
        if not (capabilities.exact_history or capabilities.batch_neighbors):
            raise ModelCapabilityError(f"{type(self).__name__} cannot score from exact per-timestamp history inside a "
                                       f"batch (exact_history is False): evaluate it with history='batch'.")
        self.earlier = self.index_earlier(batch)
        try:
            yield
        finally:
            self.earlier = None

    def index_earlier(self, batch: TemporalData) -> Any:
        """What :meth:`score` needs of a batch's events inside :meth:`within_batch`, read back there
        as :attr:`earlier`; required by ``capabilities.exact_history`` and ``batch_neighbors``."""
        raise NotImplementedError

    def check_history(self, history: str, action: str = "score") -> None:
        """Raise :class:`~tgeval.errors.ProtocolError` when the model cannot be scored (``action``: ``"score"``, ``"be
        trained"``) under ``history``: ``"exact"`` needs ``capabilities.exact_history``, ``"neighbors"``
        ``batch_neighbors``; ``"batch"`` fits every model."""
        name, capabilities = type(self).__name__, self.capabilities
        if history == "exact" and not capabilities.exact_history:
            raise ProtocolError(f"{name} cannot {action} from exact per-timestamp history inside a merged batch (its "
                                f"state is as of the batch start): use history='batch' (the staleness is reported), "
                                f"or batch_size=1 for one timestamp group per batch.")
        if history == "neighbors" and not capabilities.batch_neighbors:
            raise ProtocolError(f"{name} has no neighbour lists that read a batch's earlier events (batch_neighbors is "
                                f"False): history='neighbors' is for TGN with time_gap='query'; use "
                                f"{'exact' if capabilities.exact_history else 'batch'}.")

    def candidate_scorer(self, src: Tensor, t: Tensor, candidates: Tensor) -> CandidateScorer:
        """Prepare all-entity scoring of a batch against ``candidates`` (``[C]``).

        Returns a function of ``(event_slice, candidate_slice)`` giving the ``[b, c]`` score
        block for ``src[event_slice]`` against ``candidates[candidate_slice]`` (the candidate
        index is a slice, or an int64 tensor of positions under ``Protocol(prefilter=L)``), from the
        current state, changing nothing; the engine asks for blocks of bounded size. Override
        it to compute per-batch work once, e.g.::

            def candidate_scorer(self, src, t, candidates):
                z_src, z_cand = self.embed(src), self.embed(candidates)   # once per batch
                return lambda ev, cand: self.decode(z_src[ev, None], z_cand[None, cand])

        Without an override, a model with ``embed(nodes)`` (embeddings ``[n, D]`` of sorted
        distinct node ids from the current state) and ``decode(z_src, z_dst)`` gets exactly that
        (:func:`embedding_scorer`); any other model is scored pair by pair through :meth:`score`
        (:func:`pairwise_scorer`; the evaluation pass then warns once with its cost, see
        :func:`scores_pair_by_pair`).
        """
        methods = _embedding_methods(self)
        if methods is not None:
            return embedding_scorer(*methods, src, candidates)
        return pairwise_scorer(self.score, src, t, candidates)

    def candidate_prior(self, src: Tensor, t: Tensor, candidates: Tensor) -> Optional[Tensor]:
        """Optional: one source-independent score per candidate (``[C]``) for a step whose sources
        are ``src``, from the current state, changing nothing; larger means more likely to
        outrank a positive. Only ``Protocol(prefilter=L)``, the approximate all-entity pass,
        uses it: it scores the ``L`` candidates with the highest prior. ``None`` (the default):
        not offered, and such a pass is refused.
        """
        return None

    def catalog_counts(self, src: Tensor, t: Tensor, pos_score: Tensor,
                       catalog: Catalog) -> Optional[tuple[Tensor, Tensor]]:
        """Optional exact shortcut for all-entity ranking.

        Returns int64 ``(above, equal)`` ``[B]``: the numbers of catalog items available at
        ``t[i]`` whose score for ``(src[i], item, t[i])`` is ``> pos_score[i]`` / ``==
        pos_score[i]``, with no item excluded. ``None`` (the default) means "not offered";
        the engine then scores the catalog in chunks. The engine removes excluded items
        (the source, simultaneous positives) itself, so a shortcut must count exactly what
        :meth:`score` would give.
        """
        return None

    def train(self, mode: bool = True) -> "TemporalLinkModel":
        """Set the training mode (``eval()`` is ``train(False)``) without gradients, then
        :func:`~tgeval.stream.state.detach_history`: a module that computes on the switch leaves no autograd graph
        in the state (PyG's ``TGNMemory`` applies its pending messages when it enters eval mode)."""
        with torch.no_grad():
            super().train(mode)
        detach_history(self)
        return self

    # -- state ------------------------------------------------------------------------
    def update(self, batch: TemporalData) -> None:
        """Ingest a batch of observed positive events (called after they were scored)."""
        raise NotImplementedError

    def reset_state(self) -> None:
        """Forget all history (default: the discovered parts are reset, other buffers return to
        their values at construction)."""
        initial = getattr(self, "_initial_buffers", None)
        if initial is None:  # built without the subclass hook: its buffers are as built now
            initial = self._initial_buffers = initial_buffers(self)
        reset_of(self, initial)

    def snapshot(self) -> State:
        """A deep copy of the state (default: of every discovered part, see :mod:`tgeval.stream.state`)."""
        return snapshot_of(self)

    def restore(self, state: State) -> None:
        """Return to ``state``, a :meth:`snapshot` of this kind of model (default: discovered parts)."""
        restore_into(self, state)

    def describe(self) -> dict:
        """Name and configuration, recorded in result manifests."""
        return {"name": type(self).__name__, "num_nodes": self.num_nodes}

    @property
    def device(self) -> torch.device:
        for tensor in list(self.parameters()) + list(self.buffers()):
            return tensor.device
        return torch.device("cpu")


def _fold_capability_attributes(cls: type) -> None:
    """Fold the old per-flag class attributes of ``cls`` (``exact_history = True``) into its
    :attr:`~TemporalLinkModel.capabilities`, with a ``DeprecationWarning`` naming the one-line change;
    a property of such a name cannot be folded and is a :class:`~tgeval.errors.ModelConfigError`. The hook's old
    name, ``_index_earlier``, becomes :meth:`~TemporalLinkModel.index_earlier` the same way."""
    if "_index_earlier" in cls.__dict__ and "index_earlier" not in cls.__dict__:
        cls.index_earlier = cls.__dict__["_index_earlier"]
        warnings.warn(f"{cls.__name__}._index_earlier is deprecated: rename it `index_earlier` (and read "
                      f"`self.earlier` for `self._earlier`).", DeprecationWarning, stacklevel=3)
    old = {name: cls.__dict__[name] for name in _CAPABILITY_NAMES if name in cls.__dict__}
    if not old:
        return
    for name, value in old.items():
        if hasattr(value, "__get__"):  # a property or method: its value is known per instance only
            raise ModelConfigError(f"{cls.__name__}.{name} is computed, but a model now declares it in one "
                                   f"Capabilities object: set `self.capabilities = self.capabilities.replace("
                                   f"{name}=...)` in __init__ instead.")
        delattr(cls, name)
    cls.capabilities = cls.capabilities.replace(**old)
    declared = ", ".join(f"{field.name}={getattr(cls.capabilities, field.name)!r}"
                         for field in dataclasses.fields(Capabilities)
                         if getattr(cls.capabilities, field.name) != field.default)
    warnings.warn(f"{cls.__name__} sets {', '.join(old)} as class attribute(s), which is deprecated: declare "
                  f"`capabilities = Capabilities({declared})` instead (from tgeval.models import Capabilities).",
                  DeprecationWarning, stacklevel=3)


#: the field names of :class:`Capabilities`, once class attributes of their own
_CAPABILITY_NAMES = tuple(field.name for field in dataclasses.fields(Capabilities))


def _deprecated_alias(name: str) -> property:
    """``model.<name>``: a deprecated alias of ``model.capabilities.<name>``; assigning it (``self.exact_history =
    True`` in ``__init__``) replaces that field of the instance's ``capabilities``. Both warn."""
    def get(self: TemporalLinkModel) -> Any:
        warnings.warn(f"`model.{name}` is deprecated: read `model.capabilities.{name}`.", DeprecationWarning,
                      stacklevel=2)
        return getattr(self.capabilities, name)

    def set_(self: TemporalLinkModel, value: Any) -> None:
        warnings.warn(f"setting `model.{name}` is deprecated: declare it in the model's capabilities, "
                      f"`self.capabilities = self.capabilities.replace({name}={value!r})`.", DeprecationWarning,
                      stacklevel=2)
        self.capabilities = self.capabilities.replace(**{name: value})
    return property(get, set_, doc=f"Deprecated: ``capabilities.{name}``.")


for _name in _CAPABILITY_NAMES:
    setattr(TemporalLinkModel, _name, _deprecated_alias(_name))


def _old_earlier(self: TemporalLinkModel) -> Any:
    warnings.warn("`self._earlier` is deprecated: read `self.earlier`.", DeprecationWarning, stacklevel=2)
    return self.earlier


TemporalLinkModel._earlier = property(_old_earlier, doc="Deprecated: :attr:`earlier`.")  # type: ignore[attr-defined]


def _parameter_versions(model: nn.Module) -> list[tuple[Tensor, int]]:
    """Every parameter with its in-place version counter (no copy, no device work)."""
    return [(p, tensor_version(p)) for p in model.parameters()]


#: most ``rows x candidates x width`` activations one block of :func:`embedding_scorer` holds on a CPU
#: (4 MiB of float32: a decoder's elementwise steps run in cache, 3-4x faster than in 16 MiB blocks)
#: and on a GPU (fewer, larger kernels)
EMBEDDING_BLOCK = 2**20
EMBEDDING_BLOCK_GPU = 2**22


def scores_pair_by_pair(model: TemporalLinkModel) -> bool:
    """Whether ``model``'s all-entity scoring falls back to :func:`pairwise_scorer`: it keeps the default
    :meth:`~TemporalLinkModel.candidate_scorer` and lacks a callable ``embed`` or ``decode``, so every
    (event, candidate) pair goes through ``score`` (which recomputes per pair what depends on one node)."""
    return type(model).candidate_scorer is TemporalLinkModel.candidate_scorer and _embedding_methods(model) is None


def _embedding_methods(model: TemporalLinkModel) -> Optional[tuple[Callable, Callable]]:
    """``(model.embed, model.decode)`` when both are callable, else ``None``."""
    embed, decode = getattr(model, "embed", None), getattr(model, "decode", None)
    return (embed, decode) if callable(embed) and callable(decode) else None


def pairwise_scorer(score: Callable[[Tensor, Tensor, Tensor], Tensor], src: Tensor, t: Tensor,
                    candidates: Tensor) -> CandidateScorer:
    """A candidate scorer that expands each block into its ``b * c`` pairs ``(src[i], candidates[j],
    t[i])`` and calls ``score`` on them once: what a model offers no faster path for."""

    def scores(ev: slice, cand: Union[slice, Tensor]) -> Tensor:
        rows, cols, times = src[ev], candidates[cand], t[ev]
        b, c = rows.numel(), cols.numel()
        return score(rows.repeat_interleave(c), cols.repeat(b), times.repeat_interleave(c)).view(b, c)
    return scores


def embedding_scorer(embed: Callable[[Tensor], Tensor], decode: Callable[[Tensor, Tensor], Tensor], src: Tensor,
                     candidates: Tensor) -> CandidateScorer:
    """A blockwise candidate scorer from a model's ``embed`` and ``decode``.

    The sources and candidates are embedded once (``embed`` of their sorted distinct ids); a
    block then calls ``decode(z_src[:, None, :], z_cand[None, :, :])``: a decoder whose first
    layers act on each argument alone (e.g. PyG's link predictor
    ``lin(relu(lin_src(z_src) + lin_dst(z_dst)))``) then computes them once per node, not once
    per pair, by broadcasting. A ``decode`` that needs equal shapes gets expanded pairs.
    Blocks hold at most :data:`EMBEDDING_BLOCK` (:data:`EMBEDDING_BLOCK_GPU`) activations and split
    the longer side (usually the candidates): what ``decode`` computes per node of the whole side
    (``lin_src(z_src)`` above) is then repeated once per block for the fewer nodes.
    """
    nodes, inverse = torch.unique(torch.cat([src, candidates]), return_inverse=True)
    z = embed(nodes)
    z_src, z_cand = z[inverse[:src.numel()]], z[inverse[src.numel():]]
    broadcasts = True
    if z_src.numel() and z_cand.numel():
        try:
            probe = decode(z_src[:1, None, :], z_cand[None, :2, :])
            broadcasts = tuple(probe.shape[:2]) == (1, min(2, z_cand.size(0)))
        except RuntimeError:
            broadcasts = False

    def block(rows: Tensor, cols: Tensor) -> Tensor:
        if broadcasts:
            out = decode(rows[:, None, :], cols[None, :, :])
        else:
            b, c = rows.size(0), cols.size(0)
            out = decode(rows.repeat_interleave(c, 0), cols.repeat(b, 1)).view(b, c)
        return out.reshape(rows.size(0), cols.size(0))

    def scores(ev: slice, cand: Union[slice, Tensor]) -> Tensor:
        rows, cols = z_src[ev], z_cand[cand]
        if rows.size(0) == 0 or cols.size(0) == 0:
            return rows.new_zeros((rows.size(0), cols.size(0)))
        limit = EMBEDDING_BLOCK if rows.device.type == "cpu" else EMBEDDING_BLOCK_GPU
        axis = int(cols.size(0) >= rows.size(0))  # the side split into blocks: 0 rows, 1 candidates
        whole = cols if axis == 0 else rows
        step = max(1, limit // whole[0].numel() // whole.size(0))
        parts = [block(rows[j:j + step], cols) if axis == 0 else block(rows, cols[j:j + step])
                 for j in range(0, (rows, cols)[axis].size(0), step)]
        return torch.cat(parts, axis)

    return scores


def time_store(stored: Tensor, t: Tensor) -> Tensor:
    """``stored`` times in a dtype that holds ``t`` exactly: int64 stores become float64 the
    first time fractional-capable (floating-point) times arrive, instead of truncating them.

    Models keep times in the stream's kind and subtract before converting: a time delta
    ``(t - stored).to(float32)`` is exact in int64 for integer time (beyond 2^53 too) and
    in float64 for float time; only the delta is rounded, at the model's input.
    """
    return stored.double() if t.is_floating_point() and not stored.is_floating_point() else stored


def check_model(model: Any, *, updates: bool = True) -> None:
    """Raise :class:`~tgeval.errors.ModelCapabilityError` unless ``model`` is a :class:`TemporalLinkModel` that
    implements :meth:`~TemporalLinkModel.score` and, when the pass ``updates`` it (online replay, a warm start),
    :meth:`~TemporalLinkModel.update`: checked before any work, instead of an ``AttributeError`` or a
    ``NotImplementedError`` in the middle of a pass."""
    if not isinstance(model, TemporalLinkModel):
        raise ModelCapabilityError(
            f"the model must be a tgeval TemporalLinkModel (score(src, dst, t) and update(batch), with state methods), "
            f"got {type(model).__name__} {_brief(model)}. Subclass tgeval.models.base.TemporalLinkModel, or wrap a "
            f"function of (src, dst) in tgeval.models.fixed_scorer.FixedScorerModel(num_nodes, function).")
    needed = ("score", "update") if updates else ("score",)
    missing = [name for name in needed if getattr(type(model), name) is getattr(TemporalLinkModel, name)]
    if missing:
        raise ModelCapabilityError(
            f"{type(model).__name__} does not implement {' nor '.join(missing)}: define score(src, dst, t) -> float "
            f"[B] from the state, and update(batch), which ingests observed events (a model without state: `def "
            f"update(self, batch): pass`)" + ("" if "score" in missing else
                                               "; or evaluate it with Protocol(replay='fixed', warm=False), which "
                                               "never updates it") + ".")


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def checked_scores(model: TemporalLinkModel, scores: Any, shape: tuple[int, ...], method: str = "score") -> Tensor:
    """``scores`` returned by ``model``'s ``method`` if they are a real (float or integer) tensor of ``shape``;
    else :class:`~tgeval.errors.ModelOutputError` naming what came back and what is expected. Every scoring path
    (replay, ranking, training, diagnostics) takes a model's scores through it (:func:`score_of`)."""
    if isinstance(scores, Tensor) and tuple(scores.shape) == shape and not scores.dtype == torch.bool \
            and not scores.is_complex():
        return scores
    if not isinstance(scores, Tensor):
        found = f"a {type(scores).__name__}"
    elif scores.dim() == 0:
        found = f"a 0-d {scores.dtype} tensor (one number for the whole batch)"
    else:
        found = f"a {scores.dtype} tensor of shape {list(scores.shape)}"
    expected = "one score per (src, dst, t) query" if method == "score" else "one score per event and candidate"
    raise ModelOutputError(f"{type(model).__name__}.{method} returned {found}, but a float tensor of shape "
                           f"{list(shape)} is expected ({expected}; higher is more likely). Return e.g. "
                           f"`logits.view(-1)` or `torch.as_tensor(scores, dtype=torch.float)`.")


def score_of(model: TemporalLinkModel, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
    """``model.score(src, dst, t)``, checked (:func:`checked_scores`): a real tensor ``[B]``."""
    return checked_scores(model, model.score(src, dst, t), (src.numel(),))


def check_node_ids(model: TemporalLinkModel, data: TemporalData) -> None:
    """Raise :class:`~tgeval.errors.TemporalDataError` if an id of ``data`` is ``>= model.num_nodes``."""
    largest = int(torch.maximum(data.src.max(), data.dst.max()))
    if largest >= model.num_nodes:
        raise TemporalDataError(f"node id {largest} is >= the model's num_nodes={model.num_nodes}. "
                                f"Build the model with num_nodes >= {largest + 1} (e.g. `info.num_nodes`).")
