r"""Training over timestamp batches with swappable samplers and losses (docs/protocol.md §9).

:func:`train_epoch` runs one epoch for any :class:`~tgeval.models.base.TemporalLinkModel`
whose :meth:`score` is differentiable. Per timestamp batch, in this order::

    negatives <- sampler.sample(batch)            # history strictly before the batch
    loss      <- loss(score(positives), score(negatives)); backward; optimizer step
    model.update(batch); sampler.observe(batch)   # only now does the batch become history
    model.detach_state()                          # if the model has it

so no batch is ever scored by a state that has seen it. The walk through time is
:class:`~tgeval.stream.walk.Walk`'s, as in evaluation; the same pieces make a custom loop (here
with a toy model: an embedding table and a dot-product score, stateless; with two or more CPU
threads, run it inside ``tgeval.deterministic()`` as :func:`train_epoch` does, for bit-identical
runs)::

    import torch
    from tgeval.data.catalog import build_catalog
    from tgeval.data.synthetic import generate_events
    from tgeval.training.losses import bce_loss
    from tgeval.training.train import check_training_sampler
    from tgeval.models.base import TemporalLinkModel
    from tgeval.samplers import UniformSampler
    from tgeval.stream.walk import Walk

    class DotModel(TemporalLinkModel):                 # any differentiable score works
        def __init__(self, num_nodes, dim=16):
            super().__init__(num_nodes)
            self.emb = torch.nn.Embedding(num_nodes, dim)
        def score(self, src, dst, t):
            return (self.emb(src) * self.emb(dst)).sum(-1)
        def update(self, batch): pass                  # no history (the state methods find none)

    data = generate_events(2_000, 100, seed=0)
    model = DotModel(100)
    sampler = UniformSampler(build_catalog(data, "train", train_end=data.num_events))
    check_training_sampler(sampler)  # refuses a sampler that knows the future (inductive, Birth-Death)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    walk = Walk(data, (0, data.num_events), batch_size=200)  # canonical order (t, src, dst), timestamp batches
    for epoch in range(3):
        walk.warm_up(model, [sampler])  # state reset at each epoch start
        generator = torch.Generator().manual_seed(epoch)  # fresh negatives per epoch
        for step in walk.steps(model, samplers=[sampler]):  # updates model and sampler after each step
            batch = step.batch
            neg = sampler.sample(batch, 1, generator)  # Negatives: dst [B, K] (and mask, src)
            k = neg.dst.size(1)
            with step.scoring():  # the state must not change while scoring
                pos_score = model.score(batch.src, batch.dst, batch.t)
                neg_score = model.score(batch.src.repeat_interleave(k), neg.dst.flatten(),
                                        batch.t.repeat_interleave(k)).view(-1, k)
            loss = bce_loss(pos_score, neg_score, neg_mask=neg.mask)  # or bpr_loss, sampled_softmax_loss
            optimizer.zero_grad(); loss.backward(); optimizer.step()
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Union

import torch
from torch import Tensor
from torch.optim import Optimizer
from torch_geometric.data import TemporalData

from tgeval.core.choices import HISTORY_MODES, HistoryMode
from tgeval.data.hashing import check_built_for, fingerprint
from tgeval.data.split import Segment, check_whole_groups
from tgeval.core.device import deterministic
from tgeval.core.distributed import check_same, rank_and_world, require_group, shard, state_digest, sum_gradients
from tgeval.errors import LeakageError, ProtocolError
from tgeval.models.base import TemporalLinkModel, check_model, check_node_ids, score_of
from tgeval.samplers.base import NegativeSampler, Negatives, NegativesCheck, scored_pairs
from tgeval.stream.state import checked_update, exclusive
from tgeval.stream.walk import Walk
from tgeval.training.losses import LossFn, check_built_in, get_loss, term_count

__all__ = ["train_epoch", "Recipe", "check_training_sampler", "resolve_range"]


def resolve_range(data: TemporalData, segment_or_range: Union[Segment, tuple[int, int], None]) -> tuple[int, int]:
    """``(start, end)`` event offsets of a :class:`Segment`, a ``(start, end)`` pair, or ``None`` (all of ``data``).

    Raises:
        SplitError: if the range is empty, lies outside ``data``, or cuts a timestamp group.
    """
    num_events = data.num_events
    if segment_or_range is None:
        start, end = 0, num_events
    elif isinstance(segment_or_range, Segment):
        start, end = segment_or_range.start, segment_or_range.end
    else:
        start, end = (int(v) for v in segment_or_range)
    check_whole_groups(data.t, start, end, what="training range")
    return start, end


def check_training_sampler(sampler: NegativeSampler, *, allow_whole_stream: bool = False) -> None:
    """Refuse a sampler defined with knowledge of the whole stream (``sampler.uses_whole_stream``:
    inductive, Birth–Death; a mixture holding one) for training: its negatives of a batch depend on
    events after it. A :class:`Recipe` calls it when built; call it before a loop of your own.

    Raises:
        LeakageError: for such a sampler, unless ``allow_whole_stream=True`` (``--allow-whole-stream``
            for ``tgeval train``) says it is on purpose.
    """
    if getattr(sampler, "uses_whole_stream", False) and not allow_whole_stream:
        raise LeakageError(f"the {getattr(sampler, 'name', type(sampler).__name__)!r} sampler is defined with "
                           f"knowledge of the whole stream, so training with it uses future events. Use a "
                           f"history-based sampler, or pass allow_whole_stream=True to do it on purpose.")


@dataclass(frozen=True)
class Recipe:
    """What an epoch of :func:`train_epoch` (and each epoch of :func:`~tgeval.training.fitting.fit`) trains on: the
    negatives, the loss, the batches and the history an event is scored from.

    Attributes:
        sampler: training negatives (swap in one line; see :mod:`tgeval.samplers`).
        loss: a name of :func:`~tgeval.training.losses.get_loss` (``"bce"``, ``"bpr"``,
            ``"sampled_softmax"``) or a callable ``loss(pos, neg) -> scalar``.
        num_negatives: ``K`` negatives per positive (``>= 1``).
        batch_size: target events per timestamp batch (``>= 1``).
        seed: base seed of the negatives (epoch ``e`` draws with ``seed + e``).
        history: what an event of a batch is scored from: ``"batch"``, the state at the batch
            start (PyG's and TGB's loops; the default, for every model), or ``"exact"``, also the
            batch's events before its timestamp (:meth:`~tgeval.models.base.TemporalLinkModel.within_batch`;
            models with ``exact_history`` only), as DyGLib's neighbour sampler gives them, or
            ``"neighbors"``, those events in the neighbour lists of a memory model whose memory
            stays as of the batch start (``batch_neighbors``: TGN with ``time_gap="query"``, as
            DyGLib's TGN).
        allow_whole_stream: train with a sampler defined with the whole stream (inductive, Birth–Death) on
            purpose (:func:`check_training_sampler`).

    Raises:
        ProtocolError: at construction: an unknown loss name or a loss that is not callable, ``num_negatives`` or
            ``batch_size`` not an integer ``>= 1``, a ``seed`` that is not an integer, an unknown ``history``.
        LeakageError: at construction: a whole-stream sampler without ``allow_whole_stream=True``.
    """

    sampler: NegativeSampler
    loss: Union[str, LossFn]
    num_negatives: int = 1
    batch_size: int = 200
    seed: int = 0
    history: HistoryMode = "batch"
    allow_whole_stream: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.loss, str):
            get_loss(self.loss)
        elif not callable(self.loss):
            raise ProtocolError(f"Recipe.loss must be a loss name or a callable loss(pos, neg), got {self.loss!r}.")
        for name in ("num_negatives", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ProtocolError(f"Recipe.{name} must be an integer >= 1 for training, got {value!r}.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ProtocolError(f"Recipe.seed must be an integer, got {self.seed!r}.")
        if self.history not in HISTORY_MODES:
            raise ProtocolError(f"Recipe.history must be one of {HISTORY_MODES}, got {self.history!r}.")
        check_training_sampler(self.sampler, allow_whole_stream=self.allow_whole_stream)


@exclusive
def train_epoch(
    model: TemporalLinkModel,
    data: TemporalData,
    segment_or_range: Union[Segment, tuple[int, int], None] = None,
    *,
    recipe: Recipe,
    optimizer: Optimizer,
    epoch: int = 0,
    distributed: bool = False,
    check_state: bool = True,
) -> dict:
    r"""Train ``model`` for one epoch over ``data[start:end]`` in timestamp batches.

    **State.** At the epoch start the model's and the sampler's state are reset
    (:meth:`reset_state`) and the events before ``start`` (if any) are replayed through
    ``update`` / ``observe`` without gradients (:func:`~tgeval.eval.engine.warm_up`), so
    every epoch sees the stream from its beginning and no epoch starts with knowledge of
    the training range.

    **Per batch** (whole timestamp groups, at most ``recipe.batch_size`` events unless one group
    is larger): ``K = recipe.num_negatives`` negatives per positive from ``recipe.sampler``; one
    ``model.score`` call for the ``B`` positives and ``B K`` negatives (with gradients);
    ``recipe.loss(pos [B], neg [B, K])``; ``optimizer.zero_grad()``, ``backward()``,
    ``optimizer.step()``; then ``model.update(batch)`` and ``sampler.observe(batch)``.

    **Detach contract.** A model may define ``detach_state()`` (no arguments): then
    ``update`` runs with autograd enabled and ``detach_state()`` is called right after it,
    cutting every autograd link from the state to this batch's graph (as ``memory.detach()``
    in PyG's TGN example). A model without it has ``update`` run under
    :func:`torch.no_grad`, so its state can never hold autograd history. Either way no graph
    crosses a batch boundary — so a learned module applied *inside* ``update`` never
    receives a gradient; to train it, store the raw inputs in ``update`` and apply the module
    inside ``score`` (PyG's TGN pattern: messages stored, memory computed when scoring).

    **Whole-stream samplers** (``sampler.uses_whole_stream``: inductive, Birth–Death) know
    events after the batch; training with them leaks: a :class:`Recipe` refuses them
    unless ``allow_whole_stream=True``.

    **Order and randomness.** Events are trained in canonical order ``(t, src, dst)``
    (``data`` must be time-sorted; the file order of simultaneous events does not matter,
    docs/protocol.md §2; ``data`` itself is not modified). Negatives are keyed by the generator's seed
    and each event's index in that order (``batch.position``), so they do not depend on
    ``batch_size``. The seed is ``recipe.seed + epoch``: fresh negatives each epoch, identical
    across runs. Model randomness (dropout) follows torch's global generator, which
    this function does not touch.

    Args:
        model: a model with a differentiable :meth:`score`.
        data: the time-sorted stream (history before the range + the range).
        segment_or_range: a :class:`~tgeval.data.split.Segment` (e.g. ``split.train``), a
            ``(start, end)`` pair of event offsets, or ``None`` for all of ``data``.
        recipe: the sampler, loss, ``K``, batch size, seed and history of the epoch (:class:`Recipe`).
        optimizer: updates the model's parameters once per batch.
        epoch: epoch index, added to ``recipe.seed``.
        distributed: this process is one rank of the default ``torch.distributed`` group.
            Every rank replays every batch and updates the state with it (the state is
            replicated) and draws the same negatives (keyed by position); rank ``r`` of ``W``
            scores only its contiguous share :func:`~tgeval.core.distributed.shard` of the
            batch's events with their negatives, and its loss is the sum of its terms over
            the whole batch's term count (:func:`~tgeval.training.losses.term_count`: built-in losses
            only), so the ranks' losses add up to the batch loss. One ``all_reduce`` per
            batch sums the gradients (:func:`~tgeval.core.distributed.sum_gradients`) before
            ``optimizer.step()``, so the parameters stay equal on every rank and equal one
            process's up to the order of sums. Dropout masks are drawn per rank: with
            dropout, a run is a different random run, not the same one.
        check_state: run each batch's scoring under :func:`~tgeval.stream.state.no_state_change` (identity
            and version checks only, no copy), so a model that changes its state while scoring
            stops with :class:`LeakageError` naming what changed, instead of training on a leak
            (or failing in ``backward`` with "Trying to backward through the graph a second
            time"); and feed each batch through :func:`~tgeval.stream.state.checked_update` (the
            warm-up's reset and updates are checked either way).

    Returns:
        dict: ``loss`` (mean batch loss weighted by batch size, a float), ``num_batches``,
        ``num_events``, ``seconds``, ``events_per_second``, ``seed`` (``recipe.seed + epoch``,
        which keyed the negatives), and for a sampler with ``collisions = "mask"`` the
        ``num_masked_collisions`` of its draws (every draw is checked:
        :class:`~tgeval.samplers.base.NegativesCheck`).

    Raises:
        SplitError: for an empty range, one outside ``data``, or one cutting a timestamp group.
        TemporalDataError: if ``data`` is not time-sorted or holds ids ``>= model.num_nodes``.
        ProtocolError: a ``recipe.history`` the model cannot be trained with (a :class:`Recipe` checks itself
            when built).
        LeakageError: a model that changes its state while scoring (``check_state``), or a model in a pass of
            another thread (:func:`~tgeval.stream.state.exclusive`).
        HiddenStateError: ``update`` changed state that tgeval's state methods do not cover.
        DataMismatchError: a segment cut from other data.
        DistributedError: ``distributed=True`` without a process group, or with a loss that is not built in.
        SamplerError: a draw of the sampler that fails its checks (:class:`~tgeval.samplers.base.NegativesCheck`).
    """
    sampler, loss, num_negatives, batch_size, seed, history = (recipe.sampler, recipe.loss, recipe.num_negatives,
                                                               recipe.batch_size, recipe.seed, recipe.history)
    if distributed:
        require_group()
    check_model(model)
    model.check_history(history, "be trained")
    loss_fn: LossFn = get_loss(loss) if isinstance(loss, str) else loss
    rank, world = rank_and_world() if distributed else (0, 1)
    if distributed:
        check_built_in(loss_fn)  # before any work
    params = [p for group in optimizer.param_groups for p in group["params"]] if distributed else []
    start, end = resolve_range(data, segment_or_range)
    # the segment only: a sampler built for the whole stream may train on a prefix of it
    check_built_for(data, segment=getattr(segment_or_range, "built_from", None))
    check_node_ids(model, data)
    if distributed:  # every rank must train the same model on the same batches
        check_same("the training (data, model parameters and state, options)", (
            fingerprint(data), state_digest(model), start, end, batch_size, num_negatives, seed + epoch,
            sampler.describe()))
    device = data.src.device
    generator = torch.Generator(device=device).manual_seed(seed + epoch)
    check = NegativesCheck(sampler, model.num_nodes)
    # Canonical order (t, src, dst) inside timestamp groups, as in evaluation: file order of
    # simultaneous events changes neither the negatives (keyed by position) nor the batches.
    walk = Walk(data, (start, end), batch_size=batch_size)
    detach = getattr(model, "detach_state", None)

    def update(batch: TemporalData) -> None:
        if detach is not None:
            (checked_update if check_state else type(model).update)(model, batch)
            detach()
        else:
            with torch.no_grad():
                (checked_update if check_state else type(model).update)(model, batch)

    walk.warm_up(model, [sampler])
    was_training = model.training
    model.train()
    total: Tensor = torch.zeros((), device=device)
    began = time.perf_counter()
    # On a CPU with two or more threads, the backward of indexing (index_put_ with accumulate)
    # adds in thread order, so runs differ in the last bits and grow apart (1e-4 after two TGN
    # epochs); its deterministic kernel costs nothing measurable there and makes every run, and a
    # resume, bit-identical at any fixed thread count. On CUDA the choice is the user's (`deterministic`).
    try:
        with deterministic() if device.type == "cpu" else nullcontext():
            for step in walk.steps(model, samplers=[sampler], within=history != "batch",
                                   check_state="identity" if check_state else False,
                                   what="computing a training batch's scores", update=update):
                batch = step.batch
                neg = check.draw(batch, num_negatives, generator)  # [B, K], checked
                size, k = neg.dst.shape
                lo, hi = shard(size, rank, world)  # the whole batch in one process
                part = neg if world == 1 else Negatives(
                    neg.dst[lo:hi], None if neg.src is None else neg.src[lo:hi],
                    None if neg.mask is None else neg.mask[lo:hi])
                optimizer.zero_grad()
                if hi > lo:
                    with step.scoring():
                        scores = score_of(model, *scored_pairs(batch.src[lo:hi], batch.dst[lo:hi], batch.t[lo:hi],
                                                               part)).view(hi - lo, 1 + k)
                    pos_score, neg_score = scores[:, 0], scores[:, 1:]
                    options = {} if part.mask is None else {"neg_mask": part.mask}
                    if world == 1:
                        value = loss_fn(pos_score, neg_score, **options)
                    else:
                        value = loss_fn(pos_score, neg_score, reduction="sum", **options) / term_count(
                            loss_fn, neg.dst, neg.mask)
                    value.backward()
                else:  # an empty share (more ranks than the batch's events): nothing to score
                    value = torch.zeros((), device=device)
                if world > 1:
                    value = sum_gradients(params, value)  # the batch loss, and its gradients on every rank
                optimizer.step()
                total = total + value.detach() * size
    finally:
        model.train(was_training)
    seconds = time.perf_counter() - began
    num_events = end - start
    masked = {} if check.collisions != "mask" else {"num_masked_collisions": check.record()["num_masked_collisions"]}
    return {
        "loss": float(total) / num_events,
        "num_batches": walk.num_batches,
        "num_events": num_events,
        "seconds": seconds,
        "events_per_second": num_events / seconds if seconds > 0 else float("inf"),
        "seed": seed + epoch,
        **masked,
    }
