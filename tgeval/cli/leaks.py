"""``tgeval audit``: the leak certificate of :func:`tgeval.diagnostics.leak_audit.audit` on the command line."""

from __future__ import annotations

import argparse
import importlib
from typing import Callable, Optional

from torch_geometric.data import TemporalData

from tgeval.diagnostics.leak_audit import audit
from tgeval.errors import ModelCapabilityError
from tgeval.eval.protocol import Protocol
from tgeval.models.base import TemporalLinkModel

__all__ = ["model_builder", "audit_command"]


def model_builder(model: str, checkpoint: Optional[str], num_nodes: int) -> Callable[[TemporalData], TemporalLinkModel]:
    """``build(data)`` for ``tgeval audit --model``: a registered model's name (built with its default
    configuration, or loaded from ``checkpoint``, whose model it must be), or ``module:callable``, a function of
    the stream that returns the model (``checkpoint`` then not allowed).

    Raises:
        ModelCapabilityError: a name that is neither registered nor ``module:callable``, a callable that cannot be
            imported, or a checkpoint of another model or with ``module:callable``.
    """
    from tgeval.models import registry
    from tgeval.models.neural import message_dim
    from tgeval.training.checkpoint import load_checkpoint

    if ":" in model:
        if checkpoint is not None:
            raise ModelCapabilityError(f"--checkpoint loads a registered model; {model!r} builds its own: load the "
                                       f"weights inside it, or give the checkpoint's model name as --model.")
        module, _, name = model.partition(":")
        try:
            found = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as error:
            raise ModelCapabilityError(f"--model {model!r}: cannot import {name!r} from module {module!r} "
                                       f"({error}). Give module:callable of a module on the Python path.") from None
        return found
    if model not in registry.names():
        raise ModelCapabilityError(f"--model {model!r} is neither a registered model ({', '.join(registry.names())}) "
                                   f"nor module:callable, a function of the stream that returns the model.")
    if checkpoint is not None:
        name = load_checkpoint(checkpoint).name
        if name != model:
            raise ModelCapabilityError(f"--checkpoint {checkpoint} holds a {name!r} model, not {model!r}: give "
                                       f"--model {name}.")
        return lambda data: load_checkpoint(checkpoint).model
    if registry.entry(model).kind == "heuristic":
        return lambda data: registry.build(model, num_nodes=num_nodes)
    return lambda data: registry.build(model, num_nodes=num_nodes, msg_dim=message_dim(data))


def audit_command(args: argparse.Namespace) -> int:
    """``tgeval audit``: one line per check; exit 0 when every check passes, 1 when one fails."""
    from tgeval.cli.program import read_event_file
    from tgeval.core.atomic import write_atomic
    from tgeval.data.split import chronological_split

    data, info = read_event_file(args)
    split = chronological_split(data, args.split)
    report = audit(model_builder(args.model, args.checkpoint, info.num_nodes), data, split,
                   protocol=Protocol(batch_size=args.batch_size), checks=args.checks, seed=args.seed)
    print(report)
    if args.out is not None:
        write_atomic(args.out, report.to_json() + "\n")
    return 0 if report.passed else 1
