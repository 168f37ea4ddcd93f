"""Training: one epoch over timestamp batches (:mod:`~tgeval.training.train`), the run with
validation, early stopping and resumable checkpoints (:mod:`~tgeval.training.fitting`), the
checkpoint files (:mod:`~tgeval.training.checkpoint`) and the losses
(:mod:`~tgeval.training.losses`). Import from the modules: ``from tgeval.training.fitting import fit``.
"""
