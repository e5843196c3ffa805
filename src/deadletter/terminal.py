"""Text for a terminal: what it would act on instead of showing, shown escaped."""

from __future__ import annotations

# What a terminal acts on instead of showing: the C0 controls but the line break, DEL, the C1
# controls, and the marks that reorder or hide text ("Trojan Source"). A body, a reason or an
# error is the text of whoever could send or reject; printed raw, ESC [2J would clear the
# reader's screen and OSC 52 set their clipboard. Each is shown as its \uXXXX escape, which
# JSON reads back as the same character, so --json stays the server's data.
NOT_SHOWN = (
    *range(0x00, 0x0A),
    *range(0x0B, 0x20),
    *range(0x7F, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    0x2028,
    0x2029,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
)
_ESCAPED = {code: f"\\u{code:04x}" for code in NOT_SHOWN}
_ESCAPED_ON_ONE_LINE = {**_ESCAPED, 0x0A: "\\u000a"}


def terminal_safe(text: str, *, one_line: bool = False) -> str:
    """`text` with every character of NOT_SHOWN as its \\uXXXX escape; with `one_line`, its
    line breaks too."""
    return text.translate(_ESCAPED_ON_ONE_LINE if one_line else _ESCAPED)
