"""The pandas batch functions Spark runs on executors (pandas is imported at module level
because Spark reads their type hints to pick the UDF kind)."""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Sequence

import pandas as pd

from deadletter.pipeline.masking import masked_rows, text_cell
from deadletter.pipeline.mining import pattern_id, with_context
from deadletter.pipeline.summary import SAMPLES
from deadletter.pipeline.text import key_paths


def _rows(
    error: pd.Series, description: pd.Series, error_class: pd.Series
) -> list[tuple[str, ...]]:
    """The MASKED_COLUMNS of each dead letter (masking.masked_rows)."""
    return masked_rows(error, description, error_class)


MASKED_COLUMNS = ["signature", "tokens_text", "context_text"]


def masked(error: pd.Series, description: pd.Series, error_class: pd.Series) -> pd.DataFrame:
    """Signature, masked tokens and masked context of each dead letter."""
    return pd.DataFrame(_rows(error, description, error_class), columns=MASKED_COLUMNS)


KEYED_COLUMNS = ["mask_key", "signature", "tokens_text", "context_text", "sample"]
KEYED_TYPE = (
    "mask_key long, signature string, tokens_text string, context_text string, sample boolean"
)


def keyed(
    message_id: pd.Series, error: pd.Series, description: pd.Series, error_class: pd.Series
) -> pd.DataFrame:
    """`masked`'s three columns as a 64-bit `mask_key` (mask_key_of), the texts themselves on
    the first row of each key in the batch only (null elsewhere), and `sample`: whether the row
    is among the SAMPLES first of its key in the batch by message id (a missing id first, as
    Spark orders it).

    Later steps group and join on the key instead of the long texts, and a key's first
    message ids overall are among the ones marked in its batches, so an aggregation takes a
    pattern's samples and example from the marked rows alone.
    """
    parts = _rows(error, description, error_class)
    key_of: dict[tuple[str, ...], int] = {}
    keys: list[int] = []
    texts: list[tuple[str | None, ...]] = []
    rows_of: dict[int, list[int]] = {}
    for i, part in enumerate(parts):
        key = key_of.get(part)
        if key is None:
            key = key_of[part] = mask_key_of(*part)
        keys.append(key)
        members = rows_of.get(key)
        if members is None:
            rows_of[key] = [i]
            texts.append(part)
        else:
            members.append(i)
            texts.append(_NO_TEXTS)
    ids = [text_cell(m) for m in message_id]
    sample = [False] * len(ids)
    for members in rows_of.values():
        first = (
            members
            if len(members) <= SAMPLES
            else heapq.nsmallest(SAMPLES, members, key=lambda i: _id_order(ids[i]))
        )
        for i in first:
            sample[i] = True
    out = pd.DataFrame(texts, columns=MASKED_COLUMNS)
    out.insert(0, "mask_key", pd.Series(keys, dtype="int64"))
    out["sample"] = sample
    return out


_NO_TEXTS: tuple[None, None, None] = (None, None, None)


def _id_order(message_id: str | None) -> tuple[bool, str]:
    """A message id's place in Spark's ascending order: a missing one first."""
    return (message_id is not None, message_id or "")


def mask_key_of(signature: str, tokens_text: str, context_text: str) -> int:
    """The first 64 bits of BLAKE2b over the three masked columns (each but the last after its
    length), as a signed long: the same texts give the same key in every batch and worker."""
    text = f"{len(signature)}:{signature}{len(tokens_text)}:{tokens_text}{context_text}"
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def paths(body: pd.Series) -> pd.Series:
    """Key paths of each JSON body."""
    return pd.Series([key_paths(b if isinstance(b, str) else None) for b in body])


def assign(
    errors: Sequence[str | None],
    descriptions: Sequence[str | None],
    threshold: float,
    error_classes: Sequence[str | None] | None = None,
) -> list[str]:
    """The pattern id of each dead letter, computed in plain Python with the very functions the
    Spark job runs (masked, then with_context over the distinct pairs, then pattern_id)."""
    rows = masked(
        pd.Series(errors, dtype=object),
        pd.Series(descriptions, dtype=object),
        pd.Series(error_classes or [None] * len(errors), dtype=object),
    )
    pairs = list(zip(rows["tokens_text"], rows["context_text"], strict=True))
    counts: dict[tuple[str, str], int] = {}
    for pair in pairs:
        counts[pair] = counts.get(pair, 0) + 1
    found = with_context(((t, c, n) for (t, c), n in counts.items()), threshold)
    return [
        pattern_id(found[pair], signature)
        for pair, signature in zip(pairs, rows["signature"], strict=True)
    ]
