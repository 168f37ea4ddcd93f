r"""Mixtures of samplers with proportions (docs/protocol.md §5), e.g. half historical, half uniform.

With proportions :math:`p_1, \dots, p_m` (normalised to sum to 1), ``K`` is split the same
way for every event by largest remainders: :math:`K_i = \lfloor K p_i \rfloor`, and the
:math:`K - \sum_i K_i` leftover negatives go to the components with the largest
:math:`K p_i - K_i` (earlier components first on ties). Component :math:`i` draws its
:math:`K_i` negatives (columns in component order) with its own rules, from a generator
seeded with a seed derived from the mixture's seed and :math:`i` (components never share
random numbers). Every component already excludes the source, the true destination and the
simultaneous positives; **across** components a negative may repeat (each component is
distinct only within itself): such repeats are kept, documented and counted
(``num_cross_duplicates`` in :meth:`MixtureSampler.describe`).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.errors import ProtocolError, SamplerError
from tgeval.core.rng import derived_seed
from tgeval.samplers._draw import first_distinct_mask
from tgeval.samplers.base import NegativeSampler, Negatives, collisions_of, concat_negatives
from tgeval.stream.state import State

__all__ = ["MixtureSampler", "split_count"]

_COMPONENT_SALT = 1000


def split_count(k: int, proportions: Sequence[float]) -> list[int]:
    """Split ``k`` into integer parts by largest remainders (see the module docstring).

    Example:
        >>> split_count(5, [0.5, 0.5])
        [3, 2]
    """
    total = float(sum(proportions))
    exact = [k * p / total for p in proportions]
    parts = [int(x) for x in exact]
    order = sorted(range(len(parts)), key=lambda i: (-(exact[i] - parts[i]), i))
    for i in order[: k - sum(parts)]:
        parts[i] += 1
    return parts


class MixtureSampler(NegativeSampler):
    """Concatenate the negatives of several samplers in fixed proportions.

    Args:
        components: the samplers.
        proportions: one non-negative weight per component (not all zero).

    Raises:
        SamplerError: if lengths differ, or a proportion is negative or not finite.
    """

    name = "mixture"

    def __init__(self, components: Sequence[NegativeSampler], proportions: Sequence[float]) -> None:
        if len(components) == 0 or len(components) != len(proportions):
            raise SamplerError(f"need one proportion per component, got {len(components)} components and "
                               f"{len(proportions)} proportions.")
        if any(not 0 <= float(p) < math.inf for p in proportions) or not sum(proportions) > 0:
            raise SamplerError(f"proportions must be finite, non-negative and not all zero, got {list(proportions)}.")
        self.components = list(components)
        self.proportions = [float(p) for p in proportions]
        self.uses_whole_stream = any(getattr(c, "uses_whole_stream", False) for c in self.components)
        self.history_free = all(getattr(c, "history_free", False) for c in self.components)
        rules = {collisions_of(c) for c in self.components}  # the most permissive component's: its draws are kept
        self.collisions = next(rule for rule in ("keep", "mask", "error") if rule in rules)
        self._num_cross_duplicates = torch.zeros((), dtype=torch.long)

    def split(self, num_negatives: int) -> list[int]:
        """Negatives per component for ``K = num_negatives``."""
        return split_count(int(num_negatives), self.proportions)

    def _generator(self, generator: Optional[torch.Generator], i: int) -> torch.Generator:
        seed = 0 if generator is None else generator.initial_seed()
        sub = torch.Generator(device=generator.device if generator is not None else "cpu")
        return sub.manual_seed(derived_seed(seed, _COMPONENT_SALT + i))

    def sample(self, batch: TemporalData, num_negatives: int,
               generator: Optional[torch.Generator] = None) -> Negatives:
        """Negatives ``[B, K]``: component ``i`` fills its ``K_i`` columns, in order."""
        if int(num_negatives) < 0:
            raise ProtocolError(f"num_negatives must be >= 0, got {num_negatives}.")
        parts = [component.sample(batch, k, self._generator(generator, i))
                 for i, (component, k) in enumerate(zip(self.components, self.split(num_negatives))) if k > 0]
        if not parts:
            return Negatives(torch.zeros(batch.src.numel(), 0, dtype=torch.long, device=batch.src.device))
        out = concat_negatives(parts, batch.src)
        if len(parts) > 1:
            self._num_cross_duplicates = self._num_cross_duplicates + (~first_distinct_mask(out.dst)).sum().cpu()
        return out

    def log_q(self, batch: TemporalData, negatives: Tensor) -> Tensor:
        """Each column's ``log q`` under its own component's proposal: float64 ``[B, K]``.

        Raises:
            TypeError: if a component with negatives does not report ``log_q``.
        """
        out, start = [], 0
        for component, k in zip(self.components, self.split(negatives.size(1))):
            if k == 0:
                continue
            if not hasattr(component, "log_q"):
                raise TypeError(f"component {component.name!r} does not report log q.")
            out.append(component.log_q(batch, negatives[:, start : start + k]))  # type: ignore[attr-defined]
            start += k
        return torch.cat(out, dim=1)

    @property
    def observe_batch_invariant(self) -> bool:  # type: ignore[override]
        return all(component.observe_batch_invariant for component in self.components)

    def observe(self, batch: TemporalData) -> None:
        for component in self.components:
            component.observe(batch)

    def reset_state(self) -> None:
        for component in self.components:
            component.reset_state()
        self._num_cross_duplicates = torch.zeros((), dtype=torch.long)

    def snapshot(self) -> State:
        return {"components": [component.snapshot() for component in self.components]}

    def restore(self, state: State) -> None:
        for component, part in zip(self.components, state["components"]):
            component.restore(part)

    def describe(self) -> dict:
        return {"name": self.name, "proportions": self.proportions,
                "components": [component.describe() for component in self.components],
                "uses_whole_stream": self.uses_whole_stream,
                "cross_component_duplicates": "kept (each component is distinct within itself)",
                "num_cross_duplicates": int(self._num_cross_duplicates)}
