"""Deterministic Drain-style template mining of masked token sequences, one group at a time.

Messages are first bucketed by a group key (token count and the first constant tokens), as in
Drain's fixed-depth tree. Inside a bucket the distinct token sequences are sorted (most
frequent first, then lexicographically) and clustered greedily: a sequence joins the most
similar template when the share of positions holding the same constant token reaches the
threshold, and the positions that differ become `<*>`. Because the input of each bucket is
sorted and aggregated over the whole corpus, the result does not depend on how the data is
partitioned or in which order it arrives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from deadletter.pipeline.text import PLACEHOLDERS

WILDCARD = "<*>"
DEFAULT_THRESHOLD = 0.5
KEY_TOKENS = 2


def group_key(tokens: Sequence[str]) -> str:
    """Bucket of a token sequence: its length and its first constant tokens."""
    constants = [t for t in tokens if t not in PLACEHOLDERS][:KEY_TOKENS]
    return f"{len(tokens)}|{' '.join(constants)}"


def _similarity(template: Sequence[str], tokens: Sequence[str]) -> float:
    if not tokens:
        return 1.0
    same = sum(1 for a, b in zip(template, tokens, strict=True) if a == b and a != WILDCARD)
    # Placeholder positions count as agreeing when both hold the same placeholder type.
    return same / len(tokens)


def mine(
    sequences: Iterable[tuple[Sequence[str], int]], threshold: float = DEFAULT_THRESHOLD
) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Template of every distinct sequence in one bucket (same length), given their counts."""
    counts: dict[tuple[str, ...], int] = {}
    for seq, n in sequences:
        key = tuple(seq)
        counts[key] = counts.get(key, 0) + n
    ordered = sorted(counts, key=lambda s: (-counts[s], s))
    templates: list[list[str]] = []
    member_of: dict[tuple[str, ...], int] = {}
    for seq in ordered:
        best, best_sim = -1, -1.0
        for i, template in enumerate(templates):
            sim = _similarity(template, seq)
            if sim > best_sim:
                best, best_sim = i, sim
        if best >= 0 and best_sim >= threshold:
            template = templates[best]
            for pos, token in enumerate(seq):
                if template[pos] != token:
                    template[pos] = WILDCARD
            member_of[seq] = best
        else:
            templates.append(list(seq))
            member_of[seq] = len(templates) - 1
    return {seq: tuple(templates[i]) for seq, i in member_of.items()}


def pattern_id(template: str, signature: str) -> str:
    """Stable id of a pattern: the same template and signature give the same id on every run."""
    digest = hashlib.sha256(f"{template}\n{signature}".encode()).hexdigest()
    return f"p-{digest[:12]}"


def mine_all(
    sequences: Iterable[tuple[str, int]], threshold: float = DEFAULT_THRESHOLD
) -> dict[str, str]:
    """Template text of every distinct space-joined token sequence, given their counts."""
    buckets: dict[str, list[tuple[list[str], int]]] = {}
    for text, n in sequences:
        tokens = text.split(" ") if text else []
        buckets.setdefault(group_key(tokens), []).append((tokens, int(n)))
    out: dict[str, str] = {}
    for key in sorted(buckets):
        for seq, template in mine(buckets[key], threshold).items():
            out[" ".join(seq)] = " ".join(template)
    return out
