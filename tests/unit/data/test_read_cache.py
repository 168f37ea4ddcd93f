"""The binary cache of read_events (tgeval.data.cache): hits, misses, and entries never trusted blindly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tgeval.data.cache import CACHE_ENV
from tgeval.errors import CacheWarning
from tgeval.data.io import read_events

TEXT = "user_id,item_id,timestamp,state_label,f\n3,7,1.0,0,0.5\n4,7,2.0,1,0.25\n3,8,2.0,0,1e-3\n3,8,2.0,0,1e-3\n"


def same(first: tuple, second: tuple) -> bool:
    """Equal arrays and equal ReadInfo apart from ``cache`` and ``parser`` (no parser runs on a hit)."""
    (a, info_a), (b, info_b) = first, second
    arrays = a.to_dict().keys() == b.to_dict().keys() and all(
        value.dtype == b[key].dtype and torch.equal(value, b[key]) for key, value in a.to_dict().items())
    fields_a, fields_b = (dict(vars(info), cache=None, parser=None, node_ids=info.node_ids.tolist()) for info in (info_a, info_b))
    return arrays and fields_a == fields_b


@pytest.fixture
def events(tmp_path: Path) -> Path:
    path = tmp_path / "wiki.csv"
    path.write_text(TEXT)
    return path


def test_miss_then_hit_gives_the_same_result(events: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    plain = read_events(events, "jodie", duplicates="drop")
    first = read_events(events, "jodie", duplicates="drop", cache_dir=folder)
    second = read_events(events, "jodie", duplicates="drop", cache_dir=folder)
    assert (plain[1].cache, first[1].cache, second[1].cache) == ("off", "miss", "hit")
    assert first[1].parser == plain[1].parser is not None and second[1].parser is None
    assert same(plain, first) and same(plain, second)
    assert second[1].num_duplicates == 1 and second[1].num_events == 3 and second[1].path == str(events)
    assert len(list(folder.glob("*.npz"))) == 1


def test_environment_variable_is_the_default(events: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env-cache"))
    assert read_events(events, "jodie")[1].cache == "miss"
    assert read_events(events, "jodie")[1].cache == "hit"
    monkeypatch.setenv(CACHE_ENV, "")
    assert read_events(events, "jodie")[1].cache == "off"


def test_changed_file_or_options_miss(events: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    read_events(events, "jodie", cache_dir=folder)
    assert read_events(events, "jodie", remap=False, bipartite=False, cache_dir=folder)[1].cache == "miss"
    assert read_events(events, "jodie", sort=True, cache_dir=folder)[1].cache == "miss"
    events.write_text(TEXT.replace("4,7,2.0", "5,7,2.0"))
    data, info = read_events(events, "jodie", cache_dir=folder)
    assert info.cache == "miss" and info.node_ids.tolist()[:2] == [3, 5]
    assert read_events(events, "jodie", cache_dir=folder)[1].cache == "hit"
    assert len(list(folder.glob("*.npz"))) == 4


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_damaged_entry_is_rebuilt_with_a_warning(events: Path, tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "cache"
    plain = read_events(events, "jodie", cache_dir=folder)
    (entry,) = folder.glob("*.npz")
    raw = bytearray(entry.read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) // 2]
    elif damage == "flip":  # a byte inside the stored arrays: the zip's CRC-32 no longer matches
        start = raw.index(b"\x93NUMPY") + 128
        raw[start] ^= 0xFF
    else:
        raw = bytearray(b"not a zip file")
    entry.write_bytes(bytes(raw))
    with pytest.warns(CacheWarning, match="cannot be used"):
        rebuilt = read_events(events, "jodie", cache_dir=folder)
    assert rebuilt[1].cache == "miss" and same(plain, rebuilt)
    assert read_events(events, "jodie", cache_dir=folder)[1].cache == "hit"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_warns_and_still_serves_hits(events: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    read_events(events, "jodie", cache_dir=folder)
    folder.chmod(0o555)
    try:
        assert read_events(events, "jodie", cache_dir=folder)[1].cache == "hit"
        with pytest.warns(CacheWarning, match="cannot write the cache entry"):
            assert read_events(events, "jodie", sort=True, cache_dir=folder)[1].cache == "miss"
    finally:
        folder.chmod(0o755)


def test_folder_that_is_a_file_warns(events: Path, tmp_path: Path) -> None:
    """A cache path that cannot hold entries (here a file, also refused as root) never fails the read."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.warns(CacheWarning, match="cannot write the cache entry"):
        data, info = read_events(events, "jodie", cache_dir=blocker)
    assert info.cache == "miss" and data.num_events == 4


def _rewritten_once(events: Path, text: str, read):
    """A reader that rewrites ``events`` with ``text`` at its first call (another process saving the file after
    the cache hashed it), then reads it with ``read``."""
    calls = []

    def reader(path, **options):
        if not calls:
            events.write_text(text)
        calls.append(path)
        return read(path, **options)
    return reader


def test_a_file_changed_while_it_is_read_is_cached_under_the_bytes_parsed(events: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The arrays stored are those of the bytes hashed (one read), so each version of the file then reads as itself,
    never as the other's arrays under its sha256."""
    from tgeval.data import formats
    from tgeval.data.io import read_jodie

    folder, edited = tmp_path / "cache", TEXT.replace("4,7,2.0", "5,7,2.0")
    monkeypatch.setattr(formats, "_REGISTRY", formats._REGISTRY.copy())
    formats.register("saved-meanwhile", _rewritten_once(events, edited, read_jodie))
    original = read_events(events, "saved-meanwhile", cache_dir=folder)  # the file is `edited` from its parse on
    events.write_text(edited)
    assert read_events(events, "saved-meanwhile", cache_dir=folder)[1].cache == "miss"
    assert same(read_events(events, "saved-meanwhile", cache_dir=folder), read_events(events, "jodie"))
    events.write_text(TEXT)
    hit = read_events(events, "saved-meanwhile", cache_dir=folder)
    assert hit[1].cache == "hit" and same(hit, original) and same(hit, read_events(events, "jodie"))


def test_a_reader_of_ones_own_that_meets_a_changed_file_is_not_cached(events: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that opens the file itself does not read the bytes the cache hashed: its arrays are cached only if
    the file is unchanged after it read them."""
    from tgeval.data import formats
    from tgeval.data.io import read_jodie

    def read_by_itself(path, **options):
        copy = tmp_path / "copy.csv"
        copy.write_bytes(Path(path).read_bytes())
        return read_jodie(copy, **options)

    folder = tmp_path / "cache"
    monkeypatch.setattr(formats, "_REGISTRY", formats._REGISTRY.copy())
    formats.register("own", _rewritten_once(events, TEXT.replace("4,7,2.0", "5,7,2.0"), read_by_itself))
    with pytest.warns(CacheWarning, match="changed while it was read: its arrays were not cached"):
        assert read_events(events, "own", cache_dir=folder)[1].cache == "miss"
    assert list(folder.glob("*.npz")) == []
    assert read_events(events, "own", cache_dir=folder)[1].cache == "miss"  # unchanged meanwhile: cached
    assert read_events(events, "own", cache_dir=folder)[1].cache == "hit"
