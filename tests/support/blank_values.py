"""Values that show nothing, for the tests that a blank filter is refused and never taken as
no filter: the named ones every matrix runs, and a hypothesis strategy for the rest."""

from __future__ import annotations

from hypothesis import strategies as st

from deadletter.domain.filters import FILTER_KEYS

# Empty, ASCII spaces and controls, NUL, full-width (U+3000) and no-break spaces, a line
# separator, a zero-width space and a byte-order mark, alone and mixed.
BLANKS = ("", " ", "\t\n", "\x00", " \x00 ", "\u3000", "\u3000\u3000", "\u00a0",
          "\u2028", "\u200b", "\ufeff", " \u3000\t")  # fmt: skip

# Characters a blank value is made of: every kind of space and line break, controls (NUL
# among them) and invisible format characters.
blank_texts = st.text(
    alphabet=st.characters(categories=("Zs", "Zl", "Zp", "Cc", "Cf")),
    max_size=8,
)

# Each name of the language with each blank value; `attribute` also as a blank NAME=VALUE.
MATRIX = [
    *((key, value) for key in FILTER_KEYS for value in BLANKS),
    *(("attribute", f"{value}=x") for value in BLANKS),
]
