r"""Source-history negatives: the source's own earlier destinations (docs/protocol.md §5, a diagnostic).

For an event :math:`(u, v^+, t)` of a batch :math:`B`, with :math:`H_u` the destinations of
:math:`u` in the history observed before the batch, negatives are drawn uniformly from

.. math::
    H_u \setminus (\{v^+, u\} \cup S_{u,t}),

:math:`S_{u,t}` the simultaneous positives (destinations of :math:`u` at :math:`t`). For a new
positive (:math:`v^+ \notin H_u`) every negative is a repeated pair, so pair membership
separates the labels perfectly in the direction opposite to the usual one: this sampler
exposes how much a model's score is pair membership.

Difference with :class:`~tgeval.samplers.historical.HistoricalSampler` (DGB): that one also
removes the source's destinations at *other* timestamps of the same batch; the two coincide
when every batch is one timestamp group. When batches merge several groups, the history is
the one observed before the batch (:math:`H_{<B} \subseteq H_{<t}`; stale, never leaking).
Empty pools (a source with no history) follow ``fallback`` and are counted.
"""

from __future__ import annotations

from tgeval.samplers.historical import PairHistorySampler

__all__ = ["SourceHistorySampler"]


class SourceHistorySampler(PairHistorySampler):
    """Uniform over :math:`H_u \\setminus (\\{v^+, u\\} \\cup S_{u,t})` (see the module docstring).

    Args: as :class:`~tgeval.samplers.historical.PairHistorySampler`.
    """

    name = "source_history"
    scope = "group"
