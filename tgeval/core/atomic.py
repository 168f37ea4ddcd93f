"""Atomic file writes (a reader sees the old file or the complete new one, never a partial one),
checks that an output can be written, made before the work that produces it, the lock of a folder for its
writer, the clean-up of what a failed command left, the check that an input file is there, the path type
(:data:`PathLike`) and the JSON-safe copy of a value (:func:`json_safe`)."""

from __future__ import annotations

import errno
import fcntl
import glob
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import stat
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from tgeval.errors import InputPathError, OutputPathError

__all__ = ["write_atomic", "write_atomic_group", "check_writable", "check_input_file", "check_distinct", "same_file",
           "fresh_sibling", "replace_folder", "file_sha256", "sha256_of", "folder_lock", "full_disk_refused",
           "writing_outputs", "existing_output", "CHECKPOINT_MAGIC", "PathLike", "json_safe"]

#: a file path: text or an ``os.PathLike`` (``pathlib.Path``)
PathLike = Union[str, os.PathLike]


def json_safe(value: Any) -> Any:
    """JSON-safe copy: tensors to lists/numbers, NaN/inf to ``None``."""
    torch = sys.modules.get("torch")  # a tensor exists only once torch is imported: this module never imports it
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.tolist()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_atomic(path: PathLike, content: Union[str, bytes]) -> None:
    """Write ``content`` (text as UTF-8, or bytes) to ``path`` via a temporary file in the same
    folder, ``fsync`` and ``os.replace``; on any failure the old file is left untouched."""
    write_atomic_group([(path, content)])


def write_atomic_group(files: Sequence[tuple[PathLike, Union[str, bytes]]]) -> None:
    """Write several files that belong together (a result and its per-event file), all or none.

    Every file is first written to a temporary name in its folder and ``fsync``-ed; only then
    are they renamed into place, in the given order, with ``SIGINT`` and ``SIGTERM`` held back
    (when called on the main thread), so a termination request lands after the last rename,
    never between two. Any failure before the renames leaves every old file untouched, and temporary
    files are removed on every exit, ``KeyboardInterrupt`` and ``SystemExit`` included. (A
    ``SIGKILL`` or a power cut between two renames can still mix an old and a new file: a
    result records its events file's sha256, and readers refuse a mismatch.) Temporary files
    that a killed earlier write of a target left beside it are removed first
    (:func:`_remove_stale_temporaries`).
    """
    temporary: list[tuple[str, Path]] = []
    held: list[int] = []  # the temporary files' descriptors, locked until the renames are done
    try:
        for path, content in files:
            target = Path(path)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                _remove_stale_temporaries(target)
                payload = content.encode("utf-8") if isinstance(content, str) else content
                fd, tmp = _locked_temporary(target)
                held.append(fd)
                temporary.append((tmp, target))
                with os.fdopen(fd, "wb", closefd=False) as handle:
                    handle.write(payload)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as error:  # fsync's error names no file: name the target (a full disk's message does)
                if error.filename is None:
                    error.filename = os.fspath(target)
                raise
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        with _signals_held():
            for tmp, target in temporary:
                os.replace(tmp, target)
    finally:
        for tmp, _ in temporary:
            if os.path.exists(tmp):
                os.unlink(tmp)
        for fd in held:
            os.close(fd)


def _locked_temporary(target: Path) -> tuple[int, str]:
    """A new temporary file ``.NAME.XXXXXXXX.tmp`` beside ``target``, open and locked (``flock``) so that
    :func:`_remove_stale_temporaries` of another writer leaves it: drawn again in the rare case that one removed
    it between its creation and the lock."""
    while True:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.path.samestat(os.fstat(fd), os.stat(tmp)):
                return fd, tmp
        except FileNotFoundError:
            pass
        os.close(fd)


def _remove_stale_temporaries(target: Path) -> None:
    """Delete the temporary files that earlier writes of ``target`` left beside it when they were killed
    (``SIGKILL``, a power cut) before renaming them into place.

    Only regular files named as :func:`write_atomic_group` names its temporary files of ``target``,
    ``.NAME.XXXXXXXX.tmp`` (``NAME`` the target's name, ``XXXXXXXX`` eight of ``[a-z0-9_]``, as
    :func:`tempfile.mkstemp` draws them), are candidates, and of those only the ones no writer holds: a
    writer keeps a lock (``flock``) on its temporary file until its renames are done, and the kernel
    releases it when the writer dies. Everything else beside the target is left as it is."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}\.tmp")
    for path in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        if not pattern.fullmatch(path.name):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:  # a link, or gone meanwhile
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # a live writer's
                continue
            os.unlink(path)
        finally:
            os.close(fd)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Defer ``SIGINT`` / ``SIGTERM`` until the block ends: their Python handlers are replaced by one
    that records the signal, then restored, and a recorded signal is raised again (main thread
    only, where Python runs signal handlers; elsewhere a no-op). A thread mask would not do: a
    signal sent to the process reaches any thread that does not block it, e.g. torch's workers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {signum: signal.signal(signum, lambda number, frame: caught.append(number))
                for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for number in caught:
            signal.raise_signal(number)


def sha256_of(payload: bytes) -> str:
    """``"sha256:<hex>"`` of ``payload``, the form every checksum tgeval records takes."""
    return f"sha256:{hashlib.sha256(payload).hexdigest()}"


def file_sha256(path: PathLike) -> str:
    """``"sha256:<hex>"`` of a file's bytes (read in blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def check_writable(path: PathLike, *, folder: bool = False, what: str = "output") -> None:
    """Raise :class:`~tgeval.errors.OutputPathError` unless ``path`` can be written: a file path
    (``folder=False``) must not be a folder, a folder path must not be a file, and the nearest
    existing folder on the way must accept a new file (probed with a temporary file that is
    removed at once, so nothing is left behind, and root's permission bypass does not hide a
    read-only file system)."""
    target = Path(path)
    if folder and target.exists() and not target.is_dir():
        raise OutputPathError(f"{what} {str(target)!r} is a file, but a folder is expected: choose a folder path.")
    if not folder and target.is_dir():
        raise OutputPathError(f"{what} {str(target)!r} is a folder, but a file is expected: give a file name "
                              f"inside it, e.g. {str(target / 'result.json')!r}.")
    existing = target if folder and target.is_dir() else target.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{what} {str(target)!r} cannot be created: {str(existing)!r} is a file, not a folder.")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".tgeval-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputPathError(f"{what} {str(target)!r} cannot be written: {str(existing)!r} refuses new files "
                              f"({exc.strerror}). Choose a writable location.") from None


def check_input_file(path: PathLike, *, what: str = "input file", fix: Optional[str] = None) -> None:
    """Raise :class:`~tgeval.errors.InputPathError` unless ``path`` (named ``what`` in the message) is a regular file
    (or a link to one), checked before any reader opens it: an empty path, a path that does not exist (the message
    says where a relative path was looked for, and ``fix`` when given, else to check the path), a link that leads
    nowhere or in a loop, a folder (which files it holds), or a file that is no regular file (a named pipe, which
    blocks a reader until something writes to it, a device such as ``/dev/zero``, which never ends, a socket): a
    reader reads its input whole, some twice (its checksum, then its content)."""
    target = Path(path)
    if not os.fspath(path):
        raise InputPathError(f"{what} is an empty path: give the path of a file.")
    try:
        mode = os.stat(target).st_mode
    except OSError as exc:
        link = f" is a symbolic link to {os.readlink(target)!r}, which" if target.is_symlink() else ""
        if exc.errno == errno.ELOOP:
            raise InputPathError(f"{what} {str(target)!r}{link or ' is a symbolic link that'} leads in a loop of links "
                                 f"(a link to itself, or to a link back to it): give the path of the file itself, or "
                                 f"point the link at it.") from None
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            raise InputPathError(f"{what} {str(target)!r} cannot be read ({exc.strerror}): check its permissions "
                                 f"and the folders on its path.") from None
        if target.is_absolute():
            where, advice = "", "check the path."
        else:
            where, advice = f" (relative to {os.getcwd()!r})", "check the path or the working directory."
        raise InputPathError(f"{what} {str(target)!r}{link or ''} does not exist{where}: {fix or advice}") from None
    if stat.S_ISDIR(mode):
        held = sorted(entry.name for entry in target.iterdir() if entry.is_file())
        inside = f"it holds {', '.join(held[:5])}{', ...' if held[5:] else ''}" if held else "it holds no file"
        raise InputPathError(f"{what} {str(target)!r} is a folder, but a file is expected ({inside}): give the path "
                             f"of the file itself.")
    if not stat.S_ISREG(mode):
        kind, behaviour, streams = next(entry[1:] for entry in _SPECIAL_FILES if entry[0](mode))
        remedy = f"Save what it gives to a file first (e.g. `cat {str(target)} > data.txt`)" if streams else "Give"
        raise InputPathError(f"{what} {str(target)!r} is {kind}, not a regular file: {behaviour}, while tgeval reads "
                             f"its inputs whole, some twice (a checksum, then the content). {remedy} "
                             f"{'and give that file' if streams else 'the path of a file'}.")


def refused_payload(error: Exception, kind: str) -> str:
    """Why ``torch.load(weights_only=True)`` refused the payload of a file of ``kind`` (``"a tgeval checkpoint"``),
    in words that never suggest loading it unsafely (torch's own message says to pass ``weights_only=False``,
    which would run the code the file names): what it names, or why it is no pickle of tensors."""
    named = re.search(r"GLOBAL ([\w.]+)", str(error))
    if named:
        return (f"holds Python code or objects that {kind} never holds (it names {named[1]}), so it was refused "
                f"unread and nothing from it ran")
    detail = re.search(r"WeightsUnpickler error:\s*(.+?)\s*$", str(error), flags=re.M)
    return (f"passed its checksum but torch cannot read it: its payload is no pickle of tensors and plain values"
            f"{f' ({detail[1]})' if detail else ''}, so it was refused unread")


#: the kinds of files that are no regular file or folder, as :func:`check_input_file` names them: test, name, what
#: it does, and whether its content can be saved to a file (a stream)
_SPECIAL_FILES = (
    (stat.S_ISFIFO, "a named pipe (FIFO)", "it gives its bytes once, and a reader waits until something writes them",
     True),
    (stat.S_ISSOCK, "a socket", "it gives its bytes once", True),
    (stat.S_ISCHR, "a character device", "a device such as /dev/zero gives bytes without end", False),
    (stat.S_ISBLK, "a block device", "it is a whole disk", False),
    (lambda mode: True, "a special file", "it holds no bytes of its own", False))


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether ``a`` and ``b`` are one file: the same resolved path (symlinks followed; also for paths that do
    not exist yet), or, where both exist, the same ``(st_dev, st_ino)`` (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        first, second = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def check_distinct(inputs: Mapping[str, Optional[PathLike]], outputs: Mapping[str, Optional[PathLike]],
                   replaced: Optional[Mapping[str, PathLike]] = None,
                   writes: Optional[Mapping[str, str]] = None) -> None:
    """Raise :class:`~tgeval.errors.OutputPathError` if an output of a command could destroy an input or
    another output; called once per command, before any work, with its paths keyed by how the user named
    them (``"--out"``, ``"the data file"``; ``None`` paths are skipped).

    Refused: an output that is an input or an earlier output (:func:`same_file`: the same resolved path,
    or a symlink or hard link to the same file), any path inside a folder of ``replaced`` (a folder the
    command writes anew and swaps in whole, deleting what it held), and an output onto an existing result or
    checkpoint (:func:`existing_output`) unless it writes one of that kind there (``writes``: what an output
    writes, e.g. ``"result"``, ``"checkpoint"``, ``"comparison"``): a result is replaced by a result, never by a
    comparison."""
    sources = [(name, path) for name, path in inputs.items() if path is not None]
    targets = [(name, path) for name, path in outputs.items() if path is not None]
    for i, (name, path) in enumerate(targets):
        for other, known in [*sources, *targets[:i]]:
            if same_file(path, known):
                how = "" if os.path.abspath(path) == os.path.abspath(known) else " (through a link)"
                raise OutputPathError(f"{name} {str(path)!r} is also {other} {str(known)!r}{how}: writing it would "
                                      f"destroy that file. Give {name} another path.")
    for flag, folder in (replaced or {}).items():
        root = os.path.realpath(folder)
        for name, path in [*sources, *targets]:
            if os.path.commonpath([root, os.path.realpath(path)]) == root:
                raise OutputPathError(f"{name} {str(path)!r} lies inside {flag} {str(folder)!r}, which this command "
                                      f"replaces whole: it would be deleted. Move it out, or give {flag} another "
                                      f"folder.")
    for name, path in targets:
        held = existing_output(path)
        if held is not None and held != (writes or {}).get(name):
            raise OutputPathError(f"{name} {str(path)!r} holds a tgeval {held}, which this command would replace with "
                                  f"{'a ' + writes[name] if writes and name in writes else 'another file'}. Give "
                                  f"{name} another path, or move the {held} away first.")


#: how a checkpoint file starts (:mod:`tgeval.training.checkpoint`)
CHECKPOINT_MAGIC = b"TGEVAL-CHECKPOINT"
#: the largest JSON file read to tell whether it is a result (results are far smaller)
_RESULT_BYTES = 1 << 26


def existing_output(path: PathLike) -> Optional[str]:
    """The kind of costly tgeval output the file at ``path`` holds: ``"checkpoint"`` (its header) or ``"result"``
    (a JSON object with ``manifest`` and ``metrics``, as :meth:`~tgeval.eval.result.Result.save` writes it);
    ``None`` for anything else, or no regular file."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(CHECKPOINT_MAGIC))
            if head == CHECKPOINT_MAGIC:
                return "checkpoint"
            if not head.lstrip().startswith(b"{") or os.fstat(handle.fileno()).st_size > _RESULT_BYTES:
                return None
            payload = json.loads(head + handle.read())
    except (OSError, ValueError):  # unreadable, or no JSON (UnicodeDecodeError is a ValueError)
        return None
    return "result" if isinstance(payload, dict) and {"manifest", "metrics"} <= payload.keys() else None


def fresh_sibling(folder: PathLike) -> Path:
    """A new empty folder beside ``folder`` (its parent created if missing), hidden and named after it, with
    the usual permissions: where a command writes before :func:`replace_folder` swaps it in. Called holding the
    folder's lock (:func:`folder_lock`), whose next holder deletes it if this writer is killed."""
    target = Path(folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(fresh, 0o777 & ~umask)  # mkdtemp creates 0700
    return fresh


def replace_folder(fresh: PathLike, folder: PathLike) -> None:
    """Swap the complete folder ``fresh`` in as ``folder`` and delete the old one: two renames (the old folder
    aside, ``fresh`` in) and the deletion with ``SIGINT`` / ``SIGTERM`` held back, so a termination request lands
    after them; until then ``folder`` is untouched. (A ``SIGKILL`` between the renames leaves the old folder as
    the hidden ``.NAME.*.old`` beside it, which the folder's next writer keeps, :func:`_remove_stale_work_folders`.)
    Called holding the folder's lock (:func:`folder_lock`)."""
    target = Path(folder)
    aside = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old"))
    with _signals_held():
        if target.exists():
            os.replace(target, aside)  # onto the empty folder mkdtemp made
        os.replace(fresh, target)
        shutil.rmtree(aside)


# -- the lock of a folder for its writer -------------------------------------------------------------
#: the locks this process holds, as ``(lock file, thread)``: taking one again on that thread is a no-op
_HELD: set[tuple[str, int]] = set()


def _lock_file(folder: PathLike) -> Path:
    """The lock of ``folder``: the hidden file ``.NAME.lock`` beside it (its resolved path), so that it stays
    while the folder is swapped whole (:func:`replace_folder`) and every spelling of the folder shares it."""
    real = Path(os.path.realpath(folder))
    return real.parent / f".{real.name}.lock"


@contextmanager
def folder_lock(folder: PathLike, *, what: str, command: Optional[str] = None) -> Iterator[None]:
    """Hold ``folder`` (a run or checkpoint folder) for this writer during the block; a second writer is refused
    at once with an :class:`~tgeval.errors.OutputPathError` naming the holder (its process id and ``command``,
    default this process's command line, recorded in the lock file) and ``what`` the folder is.

    The lock is an exclusive ``flock`` on the hidden file ``.NAME.lock`` beside the folder (in its parent, created
    if missing), held until the block ends: the kernel releases it when the holder dies, so a killed writer
    leaves no stale lock, only its file, which the next holder takes over. The file is deleted when the block
    ends; a holder that opened it before then takes it only if the path still names it (else it opens the new
    one). Taken again by the thread that holds it, it is a no-op. On taking it, the work folders that killed
    earlier writers of ``folder`` left beside it are deleted (:func:`_remove_stale_work_folders`); on release,
    the folders made for the lock file, if empty.
    """
    lock = _lock_file(folder)
    key = (str(lock), threading.get_ident())
    if key in _HELD:
        yield
        return
    made = _missing_folders(lock.parent)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = _acquire(lock, folder, what)
        _HELD.add(key)
        try:
            record = json.dumps({"pid": os.getpid(), "command": command or shlex.join(sys.argv)}).encode()
            try:
                os.ftruncate(fd, 0)
                os.write(fd, record)
            except OSError as error:
                error.filename = str(lock)
                raise
            _remove_stale_work_folders(Path(folder))
            yield
        finally:
            _HELD.discard(key)
            try:
                if os.path.samestat(os.fstat(fd), os.stat(lock)):
                    os.unlink(lock)
            except FileNotFoundError:
                pass
            os.close(fd)
    finally:
        _remove_empty(made)


def _acquire(lock: Path, folder: PathLike, what: str) -> int:
    """The open, exclusively locked lock file ``lock`` of ``folder``; a held one is refused, naming its holder."""
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        except OSError as error:
            if error.errno in _NO_SPACE:
                raise
            raise OutputPathError(f"{what} {str(folder)!r} cannot be locked for this writer: its lock file "
                                  f"{str(lock)!r} cannot be opened ({error.strerror}). The lock lies beside the "
                                  f"folder: choose a folder whose parent accepts new files, or remove what is "
                                  f"at that path.") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise OutputPathError(f"{what} {str(folder)!r} is being written by {holder}, which holds its lock "
                                  f"{str(lock)!r}: two writers would mix their files. Wait until it ends, or choose "
                                  f"another {what}.") from None
        try:
            if os.path.samestat(os.fstat(fd), os.stat(lock)):
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # its holder deleted it meanwhile: open the path anew


def _holder(fd: int) -> str:
    """Who holds a lock, as its file records it."""
    try:
        record = json.loads(os.pread(fd, 1 << 16, 0))
        return f"process {int(record['pid'])} ({record['command']})"
    except (OSError, ValueError, KeyError, TypeError):  # being written, or not ours
        return "another process"


def _remove_stale_work_folders(folder: Path) -> None:
    """Delete the work folders that killed earlier writers of ``folder`` left beside it: ``.NAME.XXXXXXXX.tmp``
    (a run written before its swap, :func:`fresh_sibling`) and ``.NAME.XXXXXXXX.old`` (the previous folder being
    deleted, :func:`replace_folder`). Called by the new holder of the folder's lock, so no live writer owns one.
    Real folders of those names only (no link, no file); and none while ``folder`` is missing and an ``.old``
    folder holds files: a swap cut between its two renames (``SIGKILL``, a power cut), the previous folder
    there and the new one in the ``.tmp`` folder, left to be recovered."""
    pattern = re.compile(rf"\.{re.escape(folder.name)}\.[a-z0-9_]{{8}}\.(tmp|old)")
    found = [path for path in folder.parent.glob(f".{glob.escape(folder.name)}.*")
             if pattern.fullmatch(path.name) and path.is_dir() and not path.is_symlink()]
    if not folder.exists() and any(path.suffix == ".old" and any(path.iterdir()) for path in found):
        return
    for path in found:
        shutil.rmtree(path)


def _missing_folders(path: PathLike) -> list[Path]:
    """``path`` and its ancestors that do not exist, deepest first: what writing into ``path`` creates."""
    missing, folder = [], Path(os.path.abspath(path))
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_empty(folders: Sequence[Path]) -> None:
    """Remove those of ``folders`` (deepest first) that exist and are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty, or gone
            pass


# -- a full disk, and the clean-up of a failed command ---------------------------------------------
#: what a write meets on a full disk or a spent quota
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def _no_space(path: PathLike, error: OSError, fix: str) -> OutputPathError:
    """The error of a full disk met writing ``path`` (atomically: the previous file is unchanged)."""
    folder = Path(path).absolute().parent
    while not folder.exists():
        folder = folder.parent
    free, why = shutil.disk_usage(folder).free, error.strerror or os.strerror(error.errno)
    return OutputPathError(f"{path} could not be written: no space left on the disk of {str(folder)!r} "
                           f"({free / 2**20:,.1f} MiB free; {why}). The previous {Path(path).name}, if any, is "
                           f"unchanged. {fix}")


@contextmanager
def full_disk_refused(path: PathLike, fix: str) -> Iterator[None]:
    """Turn a full disk (``ENOSPC``, ``EDQUOT``) while the block writes ``path`` atomically into an
    :class:`~tgeval.errors.OutputPathError` naming the path, the space left and ``fix``."""
    try:
        yield
    except OSError as error:
        if error.errno not in _NO_SPACE:
            raise
        raise _no_space(path, error, fix) from None


@contextmanager
def writing_outputs(outputs: Mapping[str, Optional[PathLike]],
                    folders: Optional[Mapping[str, Optional[PathLike]]] = None) -> Iterator[None]:
    """The block of a command that writes its ``outputs`` (files) and ``folders`` (written whole), keyed by how
    the user named them as for :func:`check_distinct`; the command line runs every command in it.

    A full disk (``ENOSPC``, ``EDQUOT``) met in the block is an :class:`~tgeval.errors.OutputPathError` naming the
    file, the space left and the flag to point elsewhere (unless a write named its own fix,
    :func:`full_disk_refused`); on any failure (an error, Ctrl-C, ``SIGTERM``) the folders that did not exist
    before the block and are empty after it are removed, as the temporary files of atomic writes are."""
    files = [(name, Path(path)) for name, path in outputs.items() if path is not None]
    whole = [(name, Path(path)) for name, path in (folders or {}).items() if path is not None]
    made = sorted({*(folder for _, path in files for folder in _missing_folders(path.parent)),
                   *(folder for _, path in whole for folder in _missing_folders(path))},
                  key=lambda folder: len(folder.parts), reverse=True)
    try:
        yield
    except BaseException as error:
        _remove_empty(made)
        if isinstance(error, OSError) and error.errno in _NO_SPACE:
            name = _owner(error.filename, files + whole)
            fix = (f"Free space, or give {name} on another disk, and run the command again." if name else
                   "Free space and run the command again.")
            raise _no_space(error.filename or "an output", error, fix) from None
        raise


def _owner(filename: Optional[PathLike], paths: Sequence[tuple[str, Path]]) -> Optional[str]:
    """The flag of the output that ``filename`` is, lies in, or lies in a work folder of (:func:`fresh_sibling`)."""
    if filename is None:
        return None
    where = Path(os.path.abspath(filename))
    for name, path in paths:
        path = Path(os.path.abspath(path))
        if any(step == path or (step.parent == path.parent and step.name.startswith(f".{path.name}."))
               for step in (where, *where.parents)):
            return name.split()[0]  # "--out novelty.csv": --out
    return None
