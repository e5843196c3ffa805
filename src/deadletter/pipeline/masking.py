"""The masked columns of each dead letter, in plain Python over any sequences: the Spark
job's batch functions (batches.py) and the in-process engine (local.py) both call it, the
latter without importing pandas."""

from __future__ import annotations

from collections.abc import Iterable

from deadletter.pipeline.text import mining_parts, tokenize


def masked_rows(
    error: Iterable[object], description: Iterable[object], error_class: Iterable[object]
) -> list[tuple[str, ...]]:
    """(signature, tokens_text, context_text) of each dead letter (its exception class as
    text.mining_parts takes it).

    Each distinct text is masked once: dead letters of one failure repeat their description
    nearly always and their headline often, and masking is the costly part.
    """
    parts: dict[tuple[str | None, str | None, str | None], tuple[str, ...]] = {}
    tokenized: dict[str, str] = {}

    def masked(text: str) -> str:
        found = tokenized.get(text)
        if found is None:
            found = tokenized[text] = " ".join(tokenize(text))
        return found

    rows = []
    cells = zip(
        map(text_cell, error), map(text_cell, description), map(text_cell, error_class), strict=True
    )
    for key in cells:
        row = parts.get(key)
        if row is None:
            signature, headline, context = mining_parts(*key)
            context_text = masked(context) if context else ""
            row = parts[key] = (signature, masked(headline), context_text)
        rows.append(row)
    return rows


def text_cell(value: object) -> str | None:
    """A text cell, None for a missing one (pandas gives None or NaN)."""
    return value if isinstance(value, str) else None
