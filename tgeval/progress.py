"""Progress of long passes, told to whoever listens: the engine calls :func:`report`, a front end
listens with :func:`reporting` (the command line draws a bar). Without a listener nothing
happens, so progress is no argument of the engine.

Example:
    >>> seen = []
    >>> with reporting(lambda done, total: seen.append((done, total))):
    ...     report(1, 2)
    >>> report(2, 2)  # no listener any more
    >>> seen
    [(1, 2)]
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator, Optional

__all__ = ["reporting", "report"]

_LISTENER: ContextVar[Optional[Callable[[int, int], None]]] = ContextVar("tgeval_progress", default=None)


@contextmanager
def reporting(listener: Callable[[int, int], None]) -> Iterator[None]:
    """Inside the block, :func:`report` calls ``listener(done, total)``."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def report(done: int, total: int) -> None:
    """``done`` of ``total`` steps are finished (batches of a pass, ...)."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(done, total)
