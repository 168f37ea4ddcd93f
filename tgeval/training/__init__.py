"""Training: one epoch over timestamp batches (:func:`train_epoch`, its :class:`Recipe`), the run with
validation, early stopping and resumable checkpoints (:func:`fit`), the checkpoint files
(:func:`save_checkpoint`, :func:`load_checkpoint`, :class:`Checkpoint`) and the losses
(``LOSSES``, :func:`get_loss`).

The names below are imported on first use (PEP 562), so ``import tgeval.training`` loads no torch.
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("Checkpoint", "load_checkpoint", "save_checkpoint"), "tgeval.training.checkpoint"),
    **dict.fromkeys(("Checkpointing", "EarlyStopping", "Validation", "fit"), "tgeval.training.fitting"),
    **dict.fromkeys(("LOSSES", "bce_loss", "bpr_loss", "get_loss", "sampled_softmax_loss"), "tgeval.training.losses"),
    **dict.fromkeys(("Recipe", "train_epoch"), "tgeval.training.train"),
}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
