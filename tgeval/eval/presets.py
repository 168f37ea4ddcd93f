"""Presets: a peer benchmark's whole evaluation protocol under one name.

``--preset tgb`` (or :data:`TGB` in Python) sets every choice the Temporal Graph Benchmark's
link-prediction examples make, so that a TGB user gets TGB's numbers from one flag:

========================  ====================================================================
setting                   TGB's choice
========================  ====================================================================
split                     time quantiles 0.70 / 0.85: train ``t <= q70``, val ``q70 < t <= q85``,
                          test ``t > q85`` (tgeval's default split is the same)
replay                    online: every positive batch is observed after it was scored
history                   ``batch``: each event is scored from the state at its batch's start, as
                          TGB's example loop; ``exact`` for the heuristics whose leaderboard
                          figures are defined with per-event state (:data:`EXACT_HISTORY_MODELS`:
                          recency and popularity, local and global, their combinations, and
                          ``poptrack``, whose ticks are TGM's batches)
batch size                200 events
candidates                every destination id from the smallest to the largest of the stream
                          (catalog ``range``, exact all-entity ranking), the set TGB draws its
                          negatives from; with a TGB negatives file (``tgb:path=...``, the
                          validation segment's or the test segment's) its rows instead, read
                          as TGB defines them: a row is shorter where TGB left out a
                          simultaneous positive, and each event is ranked against its own row
                          (``short=allow``; the effective ``K`` per row is reported)
ties                      ``average``: rank = 1 + (#greater + #greater-or-equal) / 2, TGB's
                          evaluator's mean of its optimistic and pessimistic ranks
EdgeBank window           0.15 x the training span, a pair counting when last seen at or after
                          the latest time observed so far minus the window (``--window tgb``)
========================  ====================================================================

One difference stays on purpose: tgeval never splits a group of simultaneous events across
two batches (TGB cuts fixed slices of 200), so a batch may hold a few more than 200 events.

A setting given explicitly beside the preset wins, and the result records it as overridden:
the manifest's ``preset`` names the preset, every setting it applied (with the reason of a
setting that depends on the model) and every override.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

__all__ = ["Preset", "TGB", "PRESETS", "EXACT_HISTORY_MODELS", "apply_preset", "given_options"]

#: The registered heuristics whose published figures (Cornell et al., "On the Power of Heuristics in
#: Temporal Graphs"; TGB's leaderboard entry "Heuristic (LocalGlobal)") score every event from the
#: events strictly before its time, and ``poptrack``, whose clock's ticks are TGM's batches of 200 (a query
#: sees the ticks before its own): TGB's preset gives them ``history="exact"`` (not to a popularity decayed in
#: time, ``half_life`` given without an event clock: it has no per-event state and keeps TGB's ``batch``).
EXACT_HISTORY_MODELS = frozenset({"recency-local", "recency-global", "popularity-local", "popularity-global",
                                  "local-global", "recency-popularity-local", "recency-popularity-global", "poptrack"})


@dataclass(frozen=True)
class Preset:
    """A named protocol.

    Attributes:
        name: the preset's name (``--preset NAME``).
        settings: command-line destination -> value, as ``tgeval evaluate`` parses it
            (``history``, ``batch_size``, ``catalog``, ...).
        without_sampler: settings applied only when no ``--sampler`` is given (a negatives file
            sets its own ``K``; another sampler keeps the usual one).
        window_ratio: EdgeBank's window as a fraction of the training span.
        sampler_options: sampler name -> options the preset gives that sampler where its spec
            gives none (``tgb``: ``short="allow"``, TGB's files as shipped).
        per_model: setting -> (value, registry names of the models it applies to, why): a
            setting that replaces ``settings`` for those models.
    """

    name: str
    settings: Mapping[str, Any]
    without_sampler: Mapping[str, Any] = field(default_factory=dict)
    window_ratio: float = 0.15
    sampler_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    per_model: Mapping[str, tuple[Any, frozenset, str]] = field(default_factory=dict)

    def model_settings(self, model: Optional[str], decayed_in_time: bool = False) -> dict[str, tuple[Any, str]]:
        """The settings that depend on the model: setting -> (value, why) for the registry name ``model``; none for
        a popularity decayed in time (a half-life without an event clock holds no per-event state)."""
        if decayed_in_time:
            return {}
        return {key: (value, why) for key, (value, models, why) in self.per_model.items() if model in models}

    def protocol(self, model: Optional[str] = None, *, decayed_in_time: bool = False, **overrides: Any):
        """The :class:`~tgeval.eval.protocol.Protocol` of the preset (``num_negatives=0``: no sampled
        metrics, the candidates being the whole ``range`` catalog) for the registered model ``model``
        (its history: :meth:`model_settings`, ``decayed_in_time`` for a half-life in time), fields in
        ``overrides`` replaced."""
        from tgeval.eval.protocol import Protocol

        s = {**self.settings, **self.without_sampler,
             **{key: value for key, (value, _) in self.model_settings(model, decayed_in_time).items()}}
        fields = {"replay": s["protocol"], "history": s["history"], "batch_size": s["batch_size"],
                  "ties": s["ties"], "num_negatives": s["negatives"], "directed": s["directed"],
                  "uncovered": s["uncovered"]}
        return Protocol(**{**fields, **overrides})

    def split(self, data):
        """:func:`~tgeval.data.split.chronological_split` of ``data`` at the preset's quantiles."""
        from tgeval.data.split import chronological_split

        return chronological_split(data, self.settings["split"])

    def edgebank_window(self, data, split) -> float:
        """The preset's EdgeBank window for ``EdgeBank(window=w, anchor="latest")``: TGB's
        (:func:`~tgeval.models.heuristics.tgb_time_window` of the training events' span)."""
        from tgeval.models.heuristics import tgb_time_window

        train = data.t[split.train.start:split.train.end]
        return tgb_time_window(train.min().item(), train.max().item(), ratio=self.window_ratio)

    def catalog(self, data, num_nodes: int | None = None):
        """The preset's catalog of ``data`` (:func:`~tgeval.data.catalog.build_catalog`)."""
        from tgeval.data.catalog import build_catalog

        return build_catalog(data, self.settings["catalog"], num_nodes=num_nodes)

    def tgb_negatives(self, path, events, num_nodes: int | None = None):
        """TGB's negatives file ``path`` for ``events`` (the validation or the test segment) read as the
        preset reads it (:func:`~tgeval.samplers.fixed.read_tgb_negatives` with :attr:`sampler_options`)."""
        from tgeval.samplers.fixed import read_tgb_negatives

        return read_tgb_negatives(path, events, num_nodes=num_nodes, **self.sampler_options.get("tgb", {}))


#: The Temporal Graph Benchmark's link-prediction protocol (see the module docstring).
TGB = Preset("tgb", {"split": (0.70, 0.15, 0.15), "protocol": "online", "history": "batch", "batch_size": 200,
                     "all_entity": True, "catalog": "range", "ties": "average", "directed": True,
                     "uncovered": "rank", "window": "tgb"},
             without_sampler={"negatives": 0}, sampler_options={"tgb": {"short": "allow"}},
             per_model={"history": ("exact", EXACT_HISTORY_MODELS,
                                    "the heuristic's leaderboard protocol: per-event state, the events strictly "
                                    "before t")})

PRESETS = {preset.name: preset for preset in (TGB,)}


def apply_preset(args: Any, given: set[str]) -> dict:
    """Set ``args.<setting>`` for every setting of the preset ``args.preset`` that the command line
    did not give (``given``: the destinations set explicitly, :func:`given_options`), the settings of
    ``args.model`` (:meth:`Preset.model_settings`; none with ``--half-life`` in time) included; return the record the
    manifest keeps:
    ``{"name", "settings": what was applied, "reasons": {setting: why} for the model's settings,
    "overridden": {setting: value given instead}}``. With ``--sampler`` given, the settings for no
    sampler are not applied and the sampler is recorded as overridden; the preset's options of the
    sampler it names that its spec does not give are added to ``args.sampler`` and recorded as
    ``sampler_options``.

    Raises:
        SamplerError: a ``--sampler`` spec that is not ``NAME[:key=value,...]``.
    """
    preset = PRESETS[args.preset]
    decayed = getattr(args, "model_half_life", None) is not None and getattr(args, "clock", None) in (None, "time")
    by_model = preset.model_settings(getattr(args, "model", None), decayed)
    settings = {**preset.settings, **({} if "sampler" in given else preset.without_sampler),
                **{key: value for key, (value, _) in by_model.items()}}
    applied, overridden = {}, {}
    for key, value in settings.items():
        if key in given:
            overridden[key] = _json(getattr(args, key))
        else:
            setattr(args, key, value)
            applied[key] = _json(value)
    reasons = {key: why for key, (_, why) in by_model.items() if key in applied}
    if "sampler" in given:
        overridden["sampler"] = args.sampler
        from tgeval.samplers.registry import parse_spec  # torch: once the command line is parsed

        name, options = parse_spec(args.sampler)
        added = {key: value for key, value in preset.sampler_options.get(name, {}).items() if key not in options}
        if added:
            extra = ",".join(f"{key}={value}" for key, value in added.items())
            args.sampler += ("," if ":" in args.sampler else ":") + extra
            applied["sampler_options"] = added
    return {"name": preset.name, "settings": applied, "reasons": reasons, "overridden": overridden}


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def given_options(parser: argparse.ArgumentParser, argv: Optional[Sequence[str]]) -> set[str]:
    """The destinations that the command line ``argv`` sets explicitly: ``argv`` parsed again by
    ``parser`` with every default of its subcommands suppressed."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    saved = [(action, action.default) for sub in commands.choices.values() for action in sub._actions]
    for action, _ in saved:
        action.default = argparse.SUPPRESS
    try:
        return set(vars(parser.parse_args(argv)))
    finally:
        for action, default in saved:
            action.default = default
