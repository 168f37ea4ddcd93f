"""Named entries: the one mechanism behind the model, sampler and format registries.

An entry maps a name to a *target* (a callable, or ``"module:attribute"`` imported on first use)
and one line of help. Its **options** are not declared by hand: they are the keyword
parameters of the target's signature (name, annotation, default), less those the registry fills
itself (``skip``). A ``"module:function"`` target's options are read from the function's source
without importing its module (following ``from ... import`` re-exports), so listing them needs
no torch; a class, or a default that is not a literal, is imported and inspected.

:class:`Registry` holds the entries of one kind: :meth:`~Registry.add`,
:meth:`~Registry.entry`, :meth:`~Registry.names`, :meth:`~Registry.check_options` (a typed
error listing the valid options) and :meth:`~Registry.describe` (rows for the docs).

Example:
    >>> def greet(path: str, *, loud: bool = False, times: int = 1) -> str:
    ...     return path
    >>> greetings = Registry("greeting", ValueError)
    >>> greetings.add(Entry("hello", greet, "say hello", skip=("path",)))
    >>> [(o.name, o.annotation, o.default) for o in greetings.entry("hello").parameters]
    [('loud', 'bool', False), ('times', 'int', 1)]
    >>> greetings.check_options("hello", {"loudly": True})
    Traceback (most recent call last):
    ...
    ValueError: greeting 'hello' takes no option ['loudly']; options: loud, times.
    >>> greetings.describe()
    [Row(name='hello', help='say hello', options='loud: bool = False, times: int = 1')]
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Iterator, MutableMapping, Optional, TypeVar, Union

__all__ = ["Option", "Entry", "Row", "Registry", "load", "signature_options"]

Target = Union[str, Callable[..., Any]]
_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


@dataclass(frozen=True)
class Option:
    """A keyword option of an entry.

    Attributes:
        name: the keyword.
        annotation: its annotation as written (``"Optional[str]"``); ``""`` when none.
        default: its default (``None`` when required).
        required: it has no default.
    """

    name: str
    annotation: str = ""
    default: Any = None
    required: bool = False

    def __str__(self) -> str:
        text = f"{self.name}: {self.annotation}" if self.annotation else self.name
        return text if self.required else f"{text} = {self.default!r}"


def load(target: Target) -> Any:
    """The object ``target`` names: itself, or ``module.attribute`` for ``"module:attribute"`` (imported now)."""
    if not isinstance(target, str):
        return target
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _annotation_text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _inspected(function: Callable[..., Any], skip: Collection[str]) -> tuple[tuple[Option, ...], bool]:
    parameters = inspect.signature(function).parameters.values()
    options = tuple(Option(p.name, _annotation_text(p.annotation), None if p.default is p.empty else p.default,
                           p.default is p.empty)
                    for p in parameters if p.kind in _KEYWORD and p.name not in skip)
    return options, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _exported_from(node: ast.stmt, attribute: str) -> Optional[str]:
    """The module a package's ``_SOURCES = {name: module, ...}`` (:mod:`tgeval.core.lazy`) names for ``attribute``."""
    target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
        node.target if isinstance(node, ast.AnnAssign) else None
    if not (isinstance(target, ast.Name) and target.id == "_SOURCES" and isinstance(node.value, ast.Dict)):
        return None
    return next((value.value for key, value in zip(node.value.keys, node.value.values)
                 if isinstance(key, ast.Constant) and key.value == attribute
                 and isinstance(value, ast.Constant) and isinstance(value.value, str)), None)


def _function_source(module: str, attribute: str, depth: int = 0) -> Optional[ast.FunctionDef]:
    """The ``def`` of ``module.attribute`` read from source, or ``None``: followed through
    ``from ... import`` re-exports and a package's lazy ``_SOURCES``."""
    spec = importlib.util.find_spec(module)
    if depth > 8 or spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    for node in ast.parse(Path(spec.origin).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name == attribute:
            return node
        if isinstance(node, ast.ImportFrom) and any((alias.asname or alias.name) == attribute for alias in node.names):
            name = next(alias.name for alias in node.names if (alias.asname or alias.name) == attribute)
            package = module if spec.submodule_search_locations else module.rpartition(".")[0]
            source = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                if node.level else node.module
            return _function_source(source, name, depth + 1) if source else None
        exported = _exported_from(node, attribute)
        if exported is not None:
            return _function_source(exported, attribute, depth + 1)
    return None


def _parsed(node: ast.FunctionDef, skip: Collection[str]) -> Optional[tuple[tuple[Option, ...], bool]]:
    """Options of a parsed ``def`` (``None`` when a default is not a literal)."""
    args = node.args
    positional = args.posonlyargs + args.args
    defaults: list[Optional[ast.expr]] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults))[len(args.posonlyargs):] + list(zip(args.kwonlyargs, args.kw_defaults))
    options = []
    for arg, default in pairs:
        if arg.arg in skip:
            continue
        try:
            value = None if default is None else ast.literal_eval(default)
        except (ValueError, TypeError, SyntaxError):  # not a literal: the caller imports the target instead
            return None
        options.append(Option(arg.arg, "" if arg.annotation is None else ast.unparse(arg.annotation), value,
                              default is None))
    return tuple(options), args.kwarg is not None


@functools.lru_cache(maxsize=None)
def _options(target: Target, skip: tuple[str, ...]) -> tuple[tuple[Option, ...], bool]:
    if isinstance(target, str):
        node = _function_source(*target.partition(":")[::2])
        parsed = None if node is None else _parsed(node, skip)
        if parsed is not None:
            return parsed
    return _inspected(load(target), skip)


def signature_options(target: Target, skip: Iterable[str] = ()) -> tuple[tuple[Option, ...], bool]:
    """``(options, open)``: the keyword parameters of ``target`` besides ``skip`` (``self`` and
    ``*args`` never count), and whether it also takes ``**kwargs`` (any keyword).

    Example:
        >>> signature_options("tgeval.core.choices:flag")
        ((Option(name='key', annotation='str', default=None, required=True),), False)
    """
    return _options(target, tuple(sorted(skip)))


@dataclass(frozen=True)
class Row:
    """One line of a registry's listing: its name, help and options (``"name: type = default, ..."``)."""

    name: str
    help: str
    options: str


@dataclass(frozen=True)
class Entry:
    """A registered name.

    Attributes:
        name: the registry name (what the command line takes).
        target: the callable, or ``"module:attribute"`` (see :func:`load`).
        help: one line for the command line and the docs.
        skip: keywords the registry fills itself, never user options.
    """

    name: str
    target: Target
    help: str = ""
    skip: tuple[str, ...] = field(default=(), compare=False)

    def load(self) -> Any:
        """The target itself (imported now when registered as ``"module:attribute"``)."""
        return load(self.target)

    @property
    def parameters(self) -> tuple[Option, ...]:
        """The user options with their annotations and defaults: the target's keyword parameters besides
        :attr:`skip`, in signature order."""
        return signature_options(self.target, self.skip)[0]

    @property
    def options(self) -> tuple[str, ...]:
        """The names of :attr:`parameters`."""
        return tuple(option.name for option in self.parameters)

    @property
    def open(self) -> bool:
        """Whether the target takes any keyword (``**kwargs``): its options are then not checked."""
        return signature_options(self.target, self.skip)[1]



E = TypeVar("E", bound=Entry)


class Registry(MutableMapping[str, E]):
    """The entries of one kind, by name: a mapping ``{name: entry}`` with checked access.

    Args:
        what: the kind in messages (``"sampler"``).
        error: the exception of an unknown name or option (a :class:`ValueError` subclass).
        unknown: the message of an unknown name, formatted with ``name`` (its repr), ``names``
            (the registered ones, comma-separated) and ``choices`` (their list).
        entry_points: an entry-point group whose modules register entries, imported when the
            registry is first read.
    """

    def __init__(self, what: str, error: type[Exception], *,
                 unknown: str = "unknown {what} {name}; registered: {names}.",
                 entry_points: Optional[str] = None) -> None:
        self.what, self.error, self.unknown = what, error, unknown
        self._entries: dict[str, E] = {}
        self._entry_points = entry_points

    def __getitem__(self, name: str) -> E:
        return self.entries[name]

    def __setitem__(self, name: str, entry: E) -> None:
        self._entries[name] = entry

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def copy(self) -> "Registry[E]":
        """A registry of the same kind holding the same entries (e.g. to register into in a test)."""
        other: Registry[E] = Registry(self.what, self.error, unknown=self.unknown, entry_points=self._entry_points)
        other._entries = dict(self._entries)
        return other

    @property
    def entries(self) -> dict[str, E]:
        """``{name: entry}``, after importing the modules of the entry-point group (once)."""
        group, self._entry_points = self._entry_points, None
        for point in importlib.metadata.entry_points(group=group) if group else ():
            try:
                point.load()
            except Exception as error:
                raise ImportError(f"the {group} entry point {point.name!r} = {point.value!r} failed to import "
                                  f"({type(error).__name__}: {error}); fix or uninstall the package that "
                                  f"declares it.") from error
        return self._entries

    def add(self, entry: E, *, overwrite: bool = False) -> None:
        """Register ``entry`` under its name (a taken name raises ``ValueError`` unless ``overwrite``)."""
        if not overwrite and entry.name in self._entries:
            raise ValueError(f"a {self.what} named {entry.name!r} is already registered; pass overwrite=True to "
                             f"replace it.")
        self._entries[entry.name] = entry

    def remove(self, name: str) -> None:
        """Unregister ``name`` (the unknown-name error when there is none)."""
        self.entry(name)
        del self._entries[name]

    def names(self, where: Optional[Callable[[E], bool]] = None) -> tuple[str, ...]:
        """Registered names, sorted; only those whose entry satisfies ``where`` when given."""
        return tuple(sorted(name for name, e in self.entries.items() if where is None or where(e)))

    def entry(self, name: str) -> E:
        """The entry registered as ``name`` (:attr:`error` listing the names when there is none)."""
        entries = self.entries
        if name not in entries:
            names = self.names()
            raise self.error(self.unknown.format(what=self.what, name=repr(name), names=", ".join(names),
                                                 choices=list(names)))
        return entries[name]

    def check_options(self, name: str, given: Collection[str], *, filled: Collection[str] = (),
                      where: str = "") -> None:
        """Raise :attr:`error` naming the keys of ``given`` that ``name`` does not take, with its options.

        Args:
            name: a registered name.
            given: the option keys the user gave.
            filled: keys filled by the caller (not user options even if the target takes them).
            where: the text they came from (``"in 'historical:x=1'"``), for the message.
        """
        e = self.entry(name)
        if e.open:
            return
        allowed = [key for key in e.options if key not in filled]
        unknown = sorted(set(given) - set(allowed))
        if unknown:
            raise self.error(f"{self.what} {name!r} takes no option {unknown}{' ' + where if where else ''}; "
                             f"options: {', '.join(sorted(allowed)) or 'none'}.")

    def describe(self, where: Optional[Callable[[E], bool]] = None) -> list[Row]:
        """One :class:`Row` per entry, sorted by name: what the docs render."""
        return [Row(name, e.help, ", ".join(map(str, e.parameters))) for name, e in
                ((name, self.entry(name)) for name in self.names(where))]
