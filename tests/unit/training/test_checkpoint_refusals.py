"""A checkpoint torch's safe loader refuses is a CheckpointError that never repeats torch's advice to load it
with ``weights_only=False`` (which would run the code it names): it says the file was refused unread and that
its origin should be checked."""

import hashlib
import io
import os
from pathlib import Path

import pytest
import torch

from tgeval.training.checkpoint import CheckpointError, load_checkpoint


class Payload:
    """Pickles as a call that would create a folder."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


class Plain:
    """An object of a class a checkpoint never holds (no code runs when it is unpickled)."""


def with_header(path: Path, body: bytes) -> Path:
    """``body`` behind a valid checkpoint header and checksum: only the payload can refuse it."""
    path.write_bytes(b"TGEVAL-CHECKPOINT 2 sha256:" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    return path


def saved(value) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("payload, names", [
    (lambda folder: {"model": Payload(str(folder / "pwned"))}, "posix.mkdir"),
    (lambda folder: {"model": Plain()}, f"{__name__}.Plain"),
])
def test_a_payload_of_code_or_objects_is_refused_unread(tmp_path, payload, names):
    path = with_header(tmp_path / "crafted.pt", saved(payload(tmp_path)))
    with pytest.raises(CheckpointError) as raised:
        load_checkpoint(path)
    message = str(raised.value)
    assert f"holds Python code or objects that a tgeval checkpoint never holds (it names {names})" in message
    assert "refused unread and nothing from it ran. Check where the file came from" in message
    assert "weights_only" not in message and "will likely succeed" not in message
    assert not (tmp_path / "pwned").exists()


def test_an_unreadable_payload_names_what_failed_without_unsafe_advice(tmp_path):
    path = with_header(tmp_path / "garbage.pt", b"not a torch archive")
    with pytest.raises(CheckpointError, match=r"torch cannot read it: its payload is no pickle of tensors and plain "
                                              r"values \(Unsupported operand \d+\), so it was refused unread") as raised:
        load_checkpoint(path)
    assert "weights_only" not in str(raised.value)
