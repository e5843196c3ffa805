"""The pandas batch functions Spark runs on executors (pandas is imported at module level
because Spark reads their type hints to pick the UDF kind)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from deadletter.pipeline.mining import group_key, mine
from deadletter.pipeline.text import key_paths, mining_text, tokenize

MINING_COLUMNS = ["signature", "headline", "tokens_text", "group_key"]
MINING_TYPE = "signature string, headline string, tokens_text string, group_key string"
TEMPLATE_TYPE = "group_key string, tokens_text string, template string"


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
    """A grouped-map function: the distinct sequences of one group key -> their templates."""

    def mine_group(pdf: pd.DataFrame) -> pd.DataFrame:
        seqs = [
            (text.split(" ") if text else [], int(n))
            for text, n in zip(pdf["tokens_text"], pdf["n"], strict=True)
        ]
        found = mine(seqs, threshold)
        texts = [" ".join(seq) for seq in found]
        return pd.DataFrame(
            {
                "group_key": [pdf["group_key"].iloc[0]] * len(texts),
                "tokens_text": texts,
                "template": [" ".join(t) for t in found.values()],
            }
        )

    return mine_group
