"""The console shows escaped the very characters the command line does: `dom.js` spells the
set again in JavaScript (`NOT_SHOWN`), and this holds the two the same."""

from __future__ import annotations

import re
from importlib import resources

from deadletter.terminal import NOT_SHOWN


def _console_set() -> set[int]:
    dom = (resources.files("deadletter.api.console") / "static" / "js" / "dom.js").read_text()
    (klass,) = re.findall(r"const NOT_SHOWN = /\[(.*?)\]/g;", dom)
    codes: set[int] = set()
    for first, last in re.findall(r"\\u([0-9a-f]{4})(?:-\\u([0-9a-f]{4}))?", klass):
        codes.update(range(int(first, 16), int(last or first, 16) + 1))
    assert re.sub(r"\\u[0-9a-f]{4}|-", "", klass) == "", "only \\uXXXX escapes and ranges"
    return codes


def test_the_console_escapes_what_the_command_line_escapes() -> None:
    assert _console_set() == set(NOT_SHOWN)
