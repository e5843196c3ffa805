"""The pandas batch functions Spark runs on executors (pandas is imported at module level
because Spark reads their type hints to pick the UDF kind)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from deadletter.pipeline.mining import group_key, pattern_id, with_context
from deadletter.pipeline.text import key_paths, mining_parts, tokenize

MINING_COLUMNS = ["signature", "headline", "tokens_text", "group_key", "context_text"]
MINING_TYPE = (
    "signature string, headline string, tokens_text string, group_key string, context_text string"
)
TEMPLATE_TYPE = "tokens_text string, context_text string, template string"


def extract(error: pd.Series, description: pd.Series) -> pd.DataFrame:
    """Signature, headline, masked tokens, group key and masked context of each dead letter."""
    rows = []
    for err, desc in zip(error, description, strict=True):
        signature, headline, context = mining_parts(
            err if isinstance(err, str) else None, desc if isinstance(desc, str) else None
        )
        tokens = tokenize(headline)
        context_text = " ".join(tokenize(context)) if context else ""
        rows.append((signature, headline, " ".join(tokens), group_key(tokens), context_text))
    return pd.DataFrame(rows, columns=MINING_COLUMNS)


def paths(body: pd.Series) -> pd.Series:
    """Key paths of each JSON body."""
    return pd.Series([key_paths(b if isinstance(b, str) else None) for b in body])


def miner(threshold: float) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """A grouped-map function over the one group of every distinct (masked text, masked
    context) pair with its count `n` -> the template of each pair (mining.with_context)."""

    def mine_group(pdf: pd.DataFrame) -> pd.DataFrame:
        found = with_context(
            zip(pdf["tokens_text"], pdf["context_text"], pdf["n"], strict=True), threshold
        )
        return pd.DataFrame(
            {
                "tokens_text": [text for text, _ in found],
                "context_text": [context for _, context in found],
                "template": list(found.values()),
            }
        )

    return mine_group


def assign(
    errors: Sequence[str | None], descriptions: Sequence[str | None], threshold: float
) -> list[str]:
    """The pattern id of each dead letter, computed in plain Python with the very functions the
    Spark job runs (extract, then with_context over the distinct pairs, then pattern_id)."""
    rows = extract(pd.Series(errors, dtype=object), pd.Series(descriptions, dtype=object))
    pairs = list(zip(rows["tokens_text"], rows["context_text"], strict=True))
    counts: dict[tuple[str, str], int] = {}
    for pair in pairs:
        counts[pair] = counts.get(pair, 0) + 1
    found = with_context(((t, c, n) for (t, c), n in counts.items()), threshold)
    return [
        pattern_id(found[pair], signature)
        for pair, signature in zip(pairs, rows["signature"], strict=True)
    ]
