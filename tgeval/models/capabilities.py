"""What a model declares to the evaluation engine beyond ``score`` and ``update``: one
:class:`Capabilities` object, whose defaults fit any model (the table of
docs/guide/pyg-models.md, "Capabilities", says what the engine does with each field and which
hook it calls)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from numbers import Real

from tgeval.errors import ModelConfigError

__all__ = ["Capabilities"]


@dataclass(frozen=True)
class Capabilities:
    """A model's declaration to the engine, as a class attribute ``capabilities = Capabilities(...)``
    or, when it depends on the configuration, ``self.capabilities = ...`` in ``__init__``.

    Raises:
        ModelConfigError: a flag that is not a ``bool``, a ``tie_tolerance`` that is not a finite
            number ``>= 0``, or ``exact_history`` together with ``batch_neighbors``.
    """

    #: scores "as of ``t``" inside a merged batch: the engine calls ``within_batch`` (and ``index_earlier``)
    exact_history: bool = False
    #: only the neighbour lists read a batch's earlier events (the rest stays as of the batch start)
    batch_neighbors: bool = False
    #: ranks a whole catalog; ``False``: a catalog is refused and only sampled metrics are measured
    ranks_all_entities: bool = True
    #: relative half-width of the band in which a candidate's score ties with the positive's
    tie_tolerance: float = 0.0
    #: the whole state is in registered buffers (the scoring guard then skips its deep comparison)
    state_in_registered_tensors: bool = False

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name != "tie_tolerance" and not isinstance(value, bool):
                raise ModelConfigError(f"Capabilities.{field.name} must be True or False, got {value!r}.")
        tolerance = self.tie_tolerance
        if isinstance(tolerance, bool) or not isinstance(tolerance, Real) or not (math.isfinite(tolerance)
                                                                                  and tolerance >= 0):
            raise ModelConfigError(f"Capabilities.tie_tolerance must be a finite number >= 0 (0: exact comparison; "
                                   f"float32 neural scores: 1e-5), got {tolerance!r}.")
        object.__setattr__(self, "tie_tolerance", float(tolerance))
        if self.exact_history and self.batch_neighbors:
            raise ModelConfigError("Capabilities: exact_history and batch_neighbors exclude each other: "
                                   "batch_neighbors is for a model whose memory stays as of the batch start while "
                                   "its neighbour lists read the batch's earlier events; a model whose whole state "
                                   "can answer as of t declares exact_history alone.")

    def replace(self, **changes: object) -> "Capabilities":
        """A copy with ``changes`` (validated again), e.g. a subclass's
        ``self.capabilities = self.capabilities.replace(exact_history=True)``."""
        return dataclasses.replace(self, **changes)
