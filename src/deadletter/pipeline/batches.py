"""The pandas batch functions Spark runs on executors (pandas is imported at module level
because Spark reads their type hints to pick the UDF kind)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from deadletter.pipeline.mining import group_key, mine_all, pattern_id
from deadletter.pipeline.text import key_paths, mining_text, tokenize

MINING_COLUMNS = ["signature", "headline", "tokens_text", "group_key"]
MINING_TYPE = "signature string, headline string, tokens_text string, group_key string"
TEMPLATE_TYPE = "tokens_text string, template string"


def extract(error: pd.Series, description: pd.Series) -> pd.DataFrame:
    """Signature, headline, masked tokens and group key of each error."""
    rows = []
    for err, desc in zip(error, description, strict=True):
        signature, headline = mining_text(
            err if isinstance(err, str) else None, desc if isinstance(desc, str) else None
        )
        tokens = tokenize(headline)
        rows.append((signature, headline, " ".join(tokens), group_key(tokens)))
    return pd.DataFrame(rows, columns=MINING_COLUMNS)


def paths(body: pd.Series) -> pd.Series:
    """Key paths of each JSON body."""
    return pd.Series([key_paths(b if isinstance(b, str) else None) for b in body])


def miner(threshold: float) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """A grouped-map function over the one group of every distinct masked sequence (with its
    count `n`) -> the template of each sequence (mining.mine_all)."""

    def mine_group(pdf: pd.DataFrame) -> pd.DataFrame:
        found = mine_all(zip(pdf["tokens_text"], pdf["n"], strict=True), threshold)
        return pd.DataFrame({"tokens_text": list(found), "template": list(found.values())})

    return mine_group


def assign(
    errors: Sequence[str | None], descriptions: Sequence[str | None], threshold: float
) -> list[str]:
    """The pattern id of each dead letter, computed in plain Python with the very functions the
    Spark job runs (extract, then mine_all over the distinct sequences, then pattern_id)."""
    rows = extract(pd.Series(errors, dtype=object), pd.Series(descriptions, dtype=object))
    counts = rows.groupby("tokens_text").size()
    found = mine_all(zip(counts.index, counts.to_numpy(), strict=True), threshold)
    return [
        pattern_id(found[text], signature)
        for text, signature in zip(rows["tokens_text"], rows["signature"], strict=True)
    ]
