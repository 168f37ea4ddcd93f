"""Progress and time of long passes, told to whoever listens.

Progress: the engine calls :func:`report`, a front end listens with :func:`reporting` (the command
line draws a bar). Time: the engine and the command line mark their phases with :func:`phase`
(reading, warm-up, replay, metrics, writing), and every :class:`Timeline` opened with :func:`timing`
around them counts the seconds of each. Without a listener or a timeline nothing happens, so
neither is an argument of the engine.

Example:
    >>> seen = []
    >>> with reporting(lambda done, total: seen.append((done, total))):
    ...     report(1, 2)
    >>> report(2, 2)  # no listener any more
    >>> seen
    [(1, 2)]
    >>> with timing() as timeline:
    ...     with phase("read"):
    ...         pass
    >>> sorted(timeline.snapshot()["phases"])
    ['other', 'read']
"""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator, Optional

__all__ = ["reporting", "report", "StderrProgress", "Timeline", "timing", "phase"]

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


class StderrProgress:
    """A listener that shows a pass's progress on stderr: a one-line bar redrawn in place on a
    terminal, else (a log, CI) a plain line when ``every`` seconds have passed since the last one,
    so a short pass prints nothing and a long one a line per ``every`` seconds."""

    def __init__(self, label: str, enabled: bool = True, every: float = 10.0) -> None:
        self.label, self.enabled, self.every = label, enabled, every
        self.terminal = sys.stderr.isatty()
        self.last = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        percent = 100 * done // max(total, 1)
        if self.terminal:
            filled = 30 * done // max(total, 1)
            print(f"\r  {self.label:<28} [{'#' * filled}{'.' * (30 - filled)}] {percent:3d}%",
                  end="\n" if done >= total else "", file=sys.stderr, flush=True)
        elif time.perf_counter() - self.last >= self.every:
            self.last = time.perf_counter()
            print(f"  {self.label}: {percent}% ({done:,} of {total:,})", file=sys.stderr, flush=True)


class Timeline:
    """Wall seconds (``time.perf_counter``) of named phases since the timeline was made.

    Phases may nest: a phase's seconds exclude those of the phases opened inside it, so the
    phases never count a second twice, and ``other`` (the seconds in no phase) closes the sum:
    ``sum(phases.values()) == wall_seconds``. A phase that is still open counts up to now.
    """

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.seconds: dict[str, float] = {}
        self._open: list[list] = []  # [name, start, seconds of the phases inside it], outermost first

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Count the block's seconds (less its inner phases') as ``name``; repeated names add up."""
        entry = [name, time.perf_counter(), 0.0]
        self._open.append(entry)
        try:
            yield
        finally:
            self._open.pop()
            elapsed = time.perf_counter() - entry[1]
            self.seconds[name] = self.seconds.get(name, 0.0) + elapsed - entry[2]
            if self._open:
                self._open[-1][2] += elapsed

    def snapshot(self) -> dict:
        """``{"wall_seconds": w, "phases": {name: seconds, ..., "other": rest}}`` as of now."""
        now = time.perf_counter()
        seconds = dict(self.seconds)
        for i, (name, start, inner) in enumerate(self._open):
            child = now - self._open[i + 1][1] if i + 1 < len(self._open) else 0.0
            seconds[name] = seconds.get(name, 0.0) + (now - start) - inner - child
        wall = now - self.start
        seconds["other"] = seconds.get("other", 0.0) + wall - sum(seconds.values())
        return {"wall_seconds": wall, "phases": seconds}

    def summary(self) -> str:
        """One line, e.g. ``"12.3 s: read 1.2, replay 9.8, metrics 1.0, other 0.3"``."""
        snap = self.snapshot()
        parts = ", ".join(f"{name} {seconds:.1f}" for name, seconds in snap["phases"].items())
        return f"{snap['wall_seconds']:.1f} s: {parts}"


_TIMELINES: ContextVar[tuple[Timeline, ...]] = ContextVar("tgeval_timelines", default=())


@contextmanager
def timing() -> Iterator[Timeline]:
    """Inside the block, :func:`phase` also counts into a new :class:`Timeline` (yielded); the
    timelines of enclosing blocks keep counting too."""
    timeline = Timeline()
    token = _TIMELINES.set(_TIMELINES.get() + (timeline,))
    try:
        yield timeline
    finally:
        _TIMELINES.reset(token)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Count the block's seconds as ``name`` in every open :func:`timing` block (none: nothing)."""
    with ExitStack() as stack:
        for timeline in _TIMELINES.get():
            stack.enter_context(timeline.phase(name))
        yield
