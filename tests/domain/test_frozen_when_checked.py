"""`frozen_when_checked`: values the type checker holds frozen but that are plain dataclasses at
run time, for speed (`Message`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mypy import api as mypy_api

from deadletter.domain.model import Message


def _message() -> Message:
    return Message("m", "q", 1, b"x", {}, 1.0, 2.0, 3.0, None, None, 0, None, None, True)


def test_a_message_is_a_plain_slotted_dataclass_with_field_equality() -> None:
    m = _message()
    assert not hasattr(m, "__dict__")  # slots: no per-instance dict to build
    assert m == _message()
    assert dataclasses.replace(m, seq=2).seq == 2
    assert m.seq == 1


def test_the_type_checker_refuses_an_assignment_to_a_messages_field(tmp_path: Path) -> None:
    snippet = tmp_path / "assigns.py"
    snippet.write_text(
        "from deadletter.domain.model import Message\n\n"
        "def move(m: Message) -> None:\n"
        "    m.queue = 'elsewhere'\n"
    )
    out, _, status = mypy_api.run(
        [str(snippet), "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"]
    )
    assert status == 1
    assert 'Property "queue" defined in "Message" is read-only' in out
