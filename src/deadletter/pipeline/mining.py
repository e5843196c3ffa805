"""Deterministic template mining of masked token sequences (Drain-style, plus merges).

`mine_all` takes every distinct sequence with its count at once: the Drain core (drain.py)
buckets and clusters them and cuts clusters where a position holds words that name events,
leading program names and marked tails are read as variables or words from their values
here, templates with the same constants merge across lengths, and runs of free words join a
variable (phrases.py). The thresholds are in rules.py. `with_context` adds the description. Inputs
are aggregated and sorted, so the result does not depend on how the data is partitioned or in
which order it arrives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from deadletter.pipeline import rules
from deadletter.pipeline.drain import (
    DEFAULT_THRESHOLD,
    HEAD_MARK,
    TAIL_MARK,
    WILDCARD,
    _across_buckets,
    _bucket,
    _constants,
    _mine_buckets,
    _skeleton,
    mine,
)
from deadletter.pipeline.phrases import _filled_slots, _free_runs
from deadletter.pipeline.purity import CONTEXT_SEPARATOR, split_hidden
from deadletter.pipeline.text import PLACEHOLDERS

_TAIL_SEP = f" {TAIL_MARK} "
__all__ = ["DEFAULT_THRESHOLD", "mine", "mine_all", "pattern_id", "with_context"]


def pattern_id(template: str, signature: str) -> str:
    """Stable id of a pattern: the same template and signature give the same id on every run."""
    digest = hashlib.sha256(f"{template}\n{signature}".encode()).hexdigest()
    return f"p-{digest[:12]}"


def _split_head(text: str) -> tuple[str, str]:
    """(leading component name with its mark, or "", the rest) of a token sequence."""
    first, _, rest = text.partition(" ")
    if first.endswith(HEAD_MARK) and len(first) > 1:
        return first, rest
    return "", text


def mine_all(
    sequences: Iterable[tuple[str, int]], threshold: float = DEFAULT_THRESHOLD
) -> dict[str, str]:
    """Template text of every distinct space-joined token sequence, given their counts.

    A leading component name (`useradd: ...`, text.tokenize) is set aside and the rest mined
    (`_mine_rest`). Over the messages of one template, a name with at least
    rules.MIN_HEAD_VALUES values, or with a value seen once, is the program that reported
    the event and becomes `<*>:`; a name or two that each recur name events of their own
    (`Error:` / `Warning:`) and split the template.
    """
    counts: dict[str, int] = {}
    for text, n in sequences:
        counts[text] = counts.get(text, 0) + int(n)
    parts = {text: _split_head(text) for text in counts}
    rests: dict[str, int] = {}
    for text, (_, rest) in parts.items():
        rests[rest] = rests.get(rest, 0) + counts[text]
    mined = _mine_rest(rests.items(), threshold)
    heads: dict[str, dict[str, int]] = {}
    events_of: dict[str, set[str]] = {}
    for text, (head, rest) in parts.items():
        seen = heads.setdefault(mined[rest], {})
        seen[head] = seen.get(head, 0) + counts[text]
        events_of.setdefault(head, set()).add(mined[rest])
    out: dict[str, str] = {}
    for text, (head, rest) in parts.items():
        template = mined[rest]
        seen = heads[template]
        # Programs report many events: names that each lead rules.MIN_NAME_REUSE templates
        # or more are programs' even when only two of them reported this one.
        programs = len(seen) > 1 and all(
            h and len(events_of[h]) >= rules.MIN_NAME_REUSE for h in seen
        )
        if (_varies(seen) or programs) and _constants(template) >= 1:
            head = WILDCARD + HEAD_MARK
        out[text] = f"{head} {template}" if head and template else head or template
    return out


def _join(stem: str, tail: str) -> str:
    """Stem and tail as one sequence, a run of variables across the seam kept as one."""
    if not stem or not tail:
        return stem or tail
    first, _, rest = tail.partition(" ")
    if first in PLACEHOLDERS and stem.rsplit(" ", 1)[-1] in PLACEHOLDERS:
        tail = rest
    return f"{stem} {tail}" if tail else stem


def _mine_rest(
    sequences: Iterable[tuple[str, int]], threshold: float = DEFAULT_THRESHOLD
) -> dict[str, str]:
    """`_mine_plain` once every marked tail (text.tokenize) is resolved: the stems before it
    are mined first, and a stem template followed by rules.MIN_TAIL_VALUES distinct tails or
    more has one variable there (`Error in processing template files: <*>`); fewer tails are
    words of the event and stay."""
    counts: dict[str, int] = {}
    for text, n in sequences:
        counts[text] = counts.get(text, 0) + int(n)
    cut = {text: _cut_tail(text) for text in counts if TAIL_MARK in text}
    rewritten = {text: text for text in counts}
    if cut:
        stems: dict[str, int] = {}
        for text, (stem, _, _) in cut.items():
            stems[stem] = stems.get(stem, 0) + counts[text]
        stem_templates = _mine_plain(stems.items(), threshold)
        tails: dict[str, dict[str, int]] = {}
        for text, (stem, _, tail) in cut.items():
            seen = tails.setdefault(stem_templates[stem], {})
            seen[tail] = seen.get(tail, 0) + counts[text]
        varies = {stem: _free_text(stem, seen) for stem, seen in tails.items()}
        for text, (stem, _, tail) in cut.items():
            rewritten[text] = _join(stem, WILDCARD if varies[stem_templates[stem]] else tail)
    mined = _mine_plain(((text, n) for text, n in _count(rewritten, counts).items()), threshold)
    return {text: mined[rewritten[text]] for text in counts}


def _varies(values: dict[str, int]) -> bool:
    """Whether the values one place takes over a template's messages are a variable's: many
    (rules.MANY_VALUES), or at least rules.MIN_VARIANT_VALUES with one seen once. A few
    values that each recur are words naming events of their own (`Error:` / `Warning:`, two
    endings of one start), as Brain reads a word's variability from the data."""
    if len(values) >= rules.MANY_VALUES:
        return True
    if len(values) > 1 and max(values.values()) == 1:
        return True
    return len(values) >= rules.MIN_VARIANT_VALUES and min(values.values()) == 1


def _cut_tail(text: str) -> tuple[str, str, str]:
    """(stem, mark, tail) of a sequence with a marked tail; the tail may be empty."""
    if text.endswith(f" {TAIL_MARK}"):
        return text[: -len(TAIL_MARK) - 1], TAIL_MARK, ""
    return text.partition(_TAIL_SEP)


def _free_text(stem: str, tails: dict[str, int]) -> bool:
    """Whether the tails after one stem template are the values of a variable (`_varies`)
    and the stem names an event without them (rules.MIN_STEM_CONSTANTS). Tails are told apart
    by their first two tokens: the variants of one message of its own
    (`authentication failure; ... user=root` and without the user) are one value."""
    if _constants(stem) < rules.MIN_STEM_CONSTANTS or len(tails) < rules.MIN_VARIANT_VALUES:
        return False
    starts: dict[str, int] = {}
    for tail, n in tails.items():
        start = " ".join(tail.split(" ")[:2])
        starts[start] = starts.get(start, 0) + n
    return _varies(starts)


def _count(rewritten: dict[str, str], counts: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for text, new in rewritten.items():
        out[new] = out.get(new, 0) + counts[text]
    return out


def _mine_plain(
    sequences: Iterable[tuple[str, int]], threshold: float = DEFAULT_THRESHOLD
) -> dict[str, str]:
    """Template text of every distinct space-joined token sequence, given their counts.

    1. Sequences are bucketed by token count and plain first word (`_bucket`) and mined
       greedily inside each bucket (`mine`): the positions that vary become `<*>`. A set of
       words that cut clusters apart in more than one place is mined again as a variable
       (`_mine_buckets`).
    2. Templates whose constants agree once every run of variables counts as one (`_skeleton`)
       are one template, whatever their lengths: a list of hosts, a path split in two or a
       variable that is empty in some messages no longer splits an event. The merged
       template is the most frequent member's.
    """
    counts: dict[str, int] = {}
    for text, n in sequences:
        counts[text] = counts.get(text, 0) + int(n)
    buckets: dict[tuple[int, str], list[tuple[list[str], int]]] = {}
    for text, n in counts.items():
        tokens = text.split(" ") if text else []
        buckets.setdefault(_bucket(tokens), []).append((tokens, n))
    mined = _mine_buckets(buckets, threshold)
    weight: dict[tuple[str, ...], int] = {}
    for text, template in mined.items():
        weight[template] = weight.get(template, 0) + counts[text]
    # Again until nothing merges: a template left alone by one pass (its cluster held its
    # bucket already) joins the merged template in the next.
    for _ in range(rules.MAX_PASSES):
        across = _across_buckets(weight, threshold)
        if all(t == m for t, m in across.items()):
            break
        mined = {text: across[t] for text, t in mined.items()}
        weight = {}
        for text, template in mined.items():
            weight[template] = weight.get(template, 0) + counts[text]
    chosen: dict[tuple[str, ...], tuple[str, ...]] = {}
    for template in sorted(weight, key=lambda t: (-weight[t], t)):
        chosen.setdefault(_skeleton(template), template)
    final: dict[tuple[str, ...], int] = {}
    for template, n in weight.items():
        final[chosen[_skeleton(template)]] = final.get(chosen[_skeleton(template)], 0) + n
    framed = _free_runs(final)
    now = {text: framed[chosen[_skeleton(t)]] for text, t in mined.items()}
    # Again until nothing joins: a template that took a phrase shows its variable holds free
    # text, which another template's run of any length then fits.
    for _ in range(rules.MAX_PASSES):
        weight = {}
        members: dict[tuple[str, ...], dict[tuple[str, ...], int]] = {}
        for text, template in now.items():
            weight[template] = weight.get(template, 0) + counts[text]
            seen = members.setdefault(template, {})
            member = tuple(text.split(" ")) if text else ()
            seen[member] = seen.get(member, 0) + counts[text]
        filled = _filled_slots(weight, members, threshold)
        if all(t == f for t, f in filled.items()):
            break
        now = {text: filled[template] for text, template in now.items()}
    return {text: " ".join(template) for text, template in now.items()}


def with_context(
    rows: Iterable[tuple[str, str, int]], threshold: float = DEFAULT_THRESHOLD
) -> dict[tuple[str, str], str]:
    """Template of every distinct (masked text, masked context) pair, given their counts.

    The text (the error's headline) leads: it is mined alone (`mine_all`), and so are the
    contexts (descriptions). A text template whose dead letters carry more than one context
    template is split by context, and the context template is appended after " :: ": a
    generic `HandlerError failed` over `timeout after <NUM> ms` and `quota exceeded` is two
    patterns. A context shared by the whole group adds nothing and is left out. Before
    that, a text template whose variable place hides a split is cut (purity.split_hidden).
    """
    counts: dict[tuple[str, str], int] = {}
    for text, context, n in rows:
        counts[(text, context)] = counts.get((text, context), 0) + int(n)
    text_counts: dict[str, int] = {}
    context_counts: dict[str, int] = {}
    for (text, context), n in counts.items():
        text_counts[text] = text_counts.get(text, 0) + n
        if context:
            context_counts[context] = context_counts.get(context, 0) + n
    texts = split_hidden(mine_all(text_counts.items(), threshold), text_counts)
    contexts = mine_all(context_counts.items(), threshold)
    seen: dict[str, set[str]] = {}
    for text, context in counts:
        seen.setdefault(texts[text], set()).add(contexts.get(context, ""))
    out: dict[tuple[str, str], str] = {}
    for text, context in counts:
        template = texts[text]
        if len(seen[template]) > 1:
            template = f"{template}{CONTEXT_SEPARATOR}{contexts.get(context, '')}".rstrip()
        out[(text, context)] = template
    return out
