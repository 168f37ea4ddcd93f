r"""The replay engine: fixed-history and online evaluation over timestamp batches (SPEC §2, §7).

The order score -> record -> update lives here and nowhere else::

    for each timestamp batch of the segment:
        negatives <- sampler(batch)                       # from history before the batch
        scores    <- model (positives, negatives, catalog) # state must not change (guarded)
        record ranks, scores, strata
        if protocol == "online": model.update(batch); sampler.observe(batch)

Under ``"fixed"`` the state stays as it was at the start of the segment.
"""

from __future__ import annotations

import platform
import sys
import time
from contextlib import nullcontext
from datetime import datetime, timezone
from typing import Callable, Literal, Optional, Sequence, Union

import numpy as np
import torch
import torch_geometric
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.fingerprint import fingerprint, tensor_checksum
from tgeval.data.split import Segment, check_whole_groups
from tgeval.data.strata import event_strata
from tgeval.data.groups import canonical_order
from tgeval.data.validate import permute_events, validate
from tgeval.errors import CatalogError, NegativesFileError, TemporalDataError
from tgeval.eval.metrics import check_ties, count_above_equal
from tgeval.eval.ranking import all_entity_counts, check_no_nan
from tgeval.eval.result import Result, summarize
from tgeval.loader import TimestampBatchLoader
from tgeval.models.base import TemporalLinkModel
from tgeval.samplers.base import NegativeSampler, Negatives, SampledNegatives
from tgeval.state import no_state_change

__all__ = ["evaluate", "warm_up", "PROTOCOLS"]

Protocol = Literal["online", "fixed"]
PROTOCOLS = ("online", "fixed")
UNCOVERED_RULES = ("rank", "exclude", "error")


def warm_up(model: TemporalLinkModel, history: TemporalData, *, batch_size: int = 200,
            sampler: Optional[NegativeSampler] = None) -> None:
    """Reset ``model`` (and ``sampler``) and feed ``history`` through ``update`` in timestamp batches."""
    model.reset_state()
    if sampler is not None:
        sampler.reset_state()
    if history.num_events == 0:
        return
    with torch.no_grad():
        for batch in TimestampBatchLoader(history, batch_size):
            model.update(batch)
            if sampler is not None:
                sampler.observe(batch)


def _versions() -> dict:
    from tgeval import __version__

    return {"tgeval": __version__, "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
            "numpy": np.__version__, "python": sys.version.split()[0], "platform": platform.platform()}


def _peak_memory(device: torch.device) -> dict:
    """Peak CUDA memory of the replay, and the process's lifetime peak RSS (POSIX only)."""
    out: dict = {}
    try:
        import resource

        out["process_peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except ImportError:  # not on POSIX
        pass
    if device.type == "cuda":
        out["peak_cuda_bytes"] = torch.cuda.max_memory_allocated(device)
    return out


def _checked_inputs(model: TemporalLinkModel, data: TemporalData, segment: Segment, *, protocol: str,
                    sampler: Optional[NegativeSampler], num_negatives: int, catalog: Optional[Catalog],
                    uncovered: str) -> TemporalData:
    """Validate the arguments of :func:`evaluate`; return the validated stream."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")
    if uncovered not in UNCOVERED_RULES:
        raise ValueError(f"uncovered must be one of {UNCOVERED_RULES}, got {uncovered!r}.")
    if sampler is None and catalog is None:
        raise ValueError("nothing to measure: pass a `sampler` (sampled metrics), a `catalog` (all-entity), or both.")
    if num_negatives < 1 and sampler is not None:
        raise ValueError(f"num_negatives must be >= 1 with a sampler, got {num_negatives}.")
    data = validate(data)  # typed errors for unsorted / non-finite t, negative ids, length mismatches
    largest = int(torch.maximum(data.src.max(), data.dst.max()))
    if largest >= model.num_nodes:
        raise TemporalDataError(f"node id {largest} is >= the model's num_nodes={model.num_nodes}. "
                                f"Build the model with num_nodes >= {largest + 1} (e.g. `info.num_nodes`).")
    if model.device != data.src.device:
        raise ValueError(f"the model is on {model.device} but the data on {data.src.device}: "
                         f"move one of them (`model.to(...)` / `data.to(...)`).")
    check_whole_groups(data.t, segment.start, segment.end, what=f"{segment.name!r} segment")
    if catalog is not None and uncovered == "error":
        dst, t = data.dst[segment.start : segment.end], data.t[segment.start : segment.end]
        outside = ~catalog.to(dst.device).available(dst, t)
        if bool(outside.any()):
            first = int(torch.nonzero(outside)[0, 0])
            raise CatalogError(
                f"{int(outside.sum())} positives lie outside the {catalog.kind!r} catalog (first: event "
                f"{segment.start + first}, dst={int(dst[first])}). Use uncovered='rank' or 'exclude' "
                f"(counted either way) or a catalog that covers them."
            )
    return data


def _score_batch(model: TemporalLinkModel, batch: TemporalData, negatives: Optional[SampledNegatives],
                 catalog: Optional[Catalog], candidate_budget: int, use_shortcut: bool,
                 directed: bool) -> dict[str, Tensor]:
    """Per-event records of one batch, from the current state (the caller guards it)."""
    src, dst, t = batch.src, batch.dst, batch.t
    rec: dict[str, Tensor] = {}
    if negatives is None:
        pos = model.score(src, dst, t)
        check_no_nan(pos, "positive scores")
    else:  # positives and negatives in one call: [B] then [B * K]
        neg = negatives if isinstance(negatives, Negatives) else Negatives(negatives)
        size, k = neg.dst.shape
        neg_src = src.repeat_interleave(k) if neg.src is None else neg.src.flatten()
        scores = model.score(torch.cat([src, neg_src]), torch.cat([dst, neg.dst.flatten()]),
                             torch.cat([t, t.repeat_interleave(k)]))
        pos, neg_score = scores[:size], scores[size:].view(size, k)
        check_no_nan(pos if neg.mask is None else torch.cat([pos, neg_score[neg.mask]]), "scores")
        if neg.mask is None:
            check_no_nan(neg_score, "scores")
        rec["neg"], rec["neg_score"] = neg.dst, neg_score
        if neg.src is not None:
            rec["neg_src"] = neg.src
        if neg.mask is not None:
            rec["neg_mask"] = neg.mask
        rec["sampled_above"], rec["sampled_equal"] = count_above_equal(pos, neg_score, neg.mask,
                                                                        model.tie_tolerance)
    rec["score"] = pos
    if catalog is not None:
        counts = all_entity_counts(model, src, dst, t, pos, catalog, candidate_budget=candidate_budget,
                                   use_shortcut=use_shortcut, directed=directed)
        rec.update(above=counts.above, equal=counts.equal, candidates=counts.num_candidates,
                   filtered=counts.num_filtered, covered=counts.covered)
    return rec


def _replay(model: TemporalLinkModel, loader: TimestampBatchLoader, *, protocol: str,
            sampler: Optional[NegativeSampler], num_negatives: int, catalog: Optional[Catalog],
            generator: torch.Generator, candidate_budget: int, use_shortcut: bool,
            check_state: Union[bool, Literal["deep"]], directed: bool,
            progress: Optional[Callable[[int, int], None]]) -> tuple[dict[str, Tensor], list[float], float]:
    """Score -> record -> update over the loader's batches; per-event records on CPU, batch
    latencies (s) and the loop's wall time (s). The model is in eval mode during the loop and
    returns to its previous mode after it."""
    device = loader.data.src.device
    parts: dict[str, list[Tensor]] = {}
    latencies = []
    was_training = model.training
    model.eval()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    start_time = time.perf_counter()
    try:
        with torch.no_grad():
            for b, batch in enumerate(loader):
                batch_start = time.perf_counter()
                negatives = sampler.sample(batch, num_negatives, generator) if sampler is not None else None
                guard = no_state_change(model, deep=check_state == "deep" or None) if check_state else nullcontext()
                with guard:
                    rec = _score_batch(model, batch, negatives, catalog, candidate_budget, use_shortcut, directed)
                rec["batch"] = torch.full_like(batch.src, b)
                for key, value in rec.items():
                    parts.setdefault(key, []).append(value)
                if protocol == "online":
                    model.update(batch)
                    if sampler is not None:
                        sampler.observe(batch)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                latencies.append(time.perf_counter() - batch_start)
                if progress is not None:
                    progress(b + 1, len(loader))
    finally:
        model.train(was_training)
    elapsed = time.perf_counter() - start_time
    return {key: torch.cat(value).cpu() for key, value in parts.items()}, latencies, elapsed


def evaluate(
    model: TemporalLinkModel,
    data: TemporalData,
    segment: Segment,
    *,
    protocol: Protocol = "online",
    sampler: Optional[NegativeSampler] = None,
    num_negatives: int = 20,
    catalog: Optional[Catalog] = None,
    ties: str = "average",
    hits: Sequence[int] = (1, 3, 10),
    batch_size: int = 200,
    candidate_budget: int = 2**22,
    seed: int = 0,
    warm: bool = True,
    check_state: Union[bool, Literal["deep"]] = True,
    directed: bool = True,
    uncovered: str = "rank",
    use_shortcut: bool = True,
    data_name: Optional[str] = None,
    split: Optional[dict] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> Result:
    """Replay ``segment`` of ``data`` through ``model`` and measure link prediction.

    Args:
        model: any :class:`~tgeval.models.base.TemporalLinkModel`.
        data: the whole time-sorted stream (history + segment); checked with
            :func:`~tgeval.data.validate`, ids must be ``< model.num_nodes``.
        segment: the evaluated events ``data[segment.start:segment.end]`` (whole timestamp
            groups). Events are replayed in canonical order ``(t, src, dst)`` inside each
            group; batches carry ``e_id``, each event's index in ``data`` (for samplers with
            fixed negatives), and records keep it as ``event``.
        protocol: ``"online"`` (update after each batch is scored) or ``"fixed"`` (state
            frozen at the segment start).
        sampler: negatives for sampled metrics (``None``: no sampled metrics).
        num_negatives: ``K`` negatives per positive.
        catalog: candidates for exact all-entity ranking (``None``: no all-entity pass).
        ties: ``"average"``, ``"pessimistic"`` or ``"optimistic"`` (SPEC §7).
        hits: the ``k`` of Hits@k.
        batch_size: target events per timestamp batch (groups are never split).
        candidate_budget: most (event, candidate) scores held at once in all-entity ranking.
        seed: seed of the negative sampler's generator.
        warm: reset the model and replay ``data[:segment.start]`` through ``update``
            first; with ``False`` the model's current state is used as is.
        check_state: guard every scoring step with :func:`~tgeval.state.no_state_change`;
            ``"deep"`` also compares full snapshots for models whose state is registered buffers.
        directed: pair definition for strata and for simultaneous positives (undirected:
            an event ``(a, b, t)`` also makes ``a`` a positive of source ``b``).
        uncovered: positives outside the catalog: ``"rank"`` them against the catalog
            anyway, ``"exclude"`` them from all-entity metrics, or raise (``"error"``);
            always counted.
        use_shortcut: let models count catalog ranks exactly without scoring every item.
        data_name: dataset name recorded in the manifest.
        split: split description recorded in the manifest.
        progress: called as ``progress(batches_done, num_batches)``.

    Returns:
        Result: metrics (micro / macro, by stratum), manifest and per-event records.
    """
    ties = check_ties(ties)
    data = _checked_inputs(model, data, segment, protocol=protocol, sampler=sampler, num_negatives=num_negatives,
                           catalog=catalog, uncovered=uncovered)
    device = data.src.device
    if catalog is not None and catalog.device != device:
        catalog = catalog.to(device)
    input_fingerprint = fingerprint(data)
    drawn_for = None if sampler is None else sampler.describe().get("data_fingerprint")
    if drawn_for is not None and drawn_for != input_fingerprint:
        raise NegativesFileError(f"the sampler's negatives were drawn for other data (fingerprint {drawn_for}, "
                                 f"this data {input_fingerprint}). Redraw them for this data with save_negatives.")
    # Replay in canonical order (t, src, dst): file order inside a group cannot matter.
    order = canonical_order(data.src, data.dst, data.t)
    data = permute_events(data, order)
    data.e_id = order  # index of each event in the input (file order), carried by every batch
    data.position = torch.arange(data.num_events, device=device)  # index in replay order (keys samplers' draws)
    history, events = data[: segment.start], data[segment.start : segment.end]
    if warm:
        warm_up(model, history, batch_size=batch_size, sampler=sampler)
    generator = torch.Generator(device=device).manual_seed(seed)
    strata = event_strata(history.src, history.dst, events.src, events.dst, model.num_nodes, directed=directed)

    loader = TimestampBatchLoader(events, batch_size)
    records, latencies, elapsed = _replay(model, loader, protocol=protocol, sampler=sampler,
                                          num_negatives=num_negatives, catalog=catalog, generator=generator,
                                          candidate_budget=candidate_budget, use_shortcut=use_shortcut,
                                          check_state=check_state, directed=directed, progress=progress)
    records.update(event=events.e_id.cpu(), src=events.src.cpu(), dst=events.dst.cpu(),
                   t=events.t.cpu(), stratum=strata.cpu())
    metrics = summarize(records, ties=ties, hits=hits, uncovered=uncovered)
    lat = torch.tensor(latencies, dtype=torch.float64)
    performance = {
        "events_per_second": segment.num_events / elapsed if elapsed > 0 else float("inf"),
        "seconds": elapsed,
        "num_batches": len(loader),
        "batch_latency_ms": {"mean": float(lat.mean()) * 1e3, "median": float(lat.median()) * 1e3,
                             "max": float(lat.max()) * 1e3},
        **_peak_memory(device),
    }
    manifest = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "data": {"name": data_name, "fingerprint": input_fingerprint, "canonical_fingerprint": fingerprint(data),
                 "num_events": data.num_events,
                 "num_nodes": model.num_nodes},
        "split": split,
        "segment": segment.to_dict(),
        "protocol": protocol,
        "model": model.describe(),
        "sampler": None if sampler is None else sampler.describe(),
        "num_negatives": num_negatives if sampler is not None else 0,
        "negatives_checksum": None if sampler is None else tensor_checksum(
            *(records[key] for key in ("event", "neg", "neg_src", "neg_mask") if key in records)),
        "catalog": None if catalog is None else catalog.describe(),
        "ties": ties,
        "tie_tolerance": model.tie_tolerance,
        "aggregation": {"micro": "mean over events", "macro": "mean over sources of per-source means"},
        "hits": list(hits),
        "uncovered": uncovered,
        "strata_reference": "events before the segment (pairs directed)" if directed
        else "events before the segment (pairs undirected)",
        "batch_size": batch_size,
        "candidate_budget": candidate_budget,
        "seed": seed,
        "warm_up": warm,
        "state_guard": check_state,
        "device": str(device),
        "versions": _versions(),
    }
    return Result(metrics, manifest, performance, records)
