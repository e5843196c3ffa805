"""The Drain core of the miner: sequences bucketed by token count and leading plain words
(Drain's fixed-depth tree), clustered greedily inside each bucket (`mine`: a sequence joins
the most similar template when the share of positions holding the same token reaches the
threshold; differing positions become `<*>`), clusters cut where a position holds a few
words that name events (unless the same words vary so in several events: then they are a
variable's values), and templates of one length merged again across buckets. mining.py
drives it; the thresholds are in rules.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from deadletter.pipeline import rules
from deadletter.pipeline.text import PLACEHOLDERS

WILDCARD = "<*>"
_WORD = re.compile(rules.WORD)
_CODE_NAME = re.compile(rules.CODE_NAME)
_STATE_WORD = re.compile(rules.STATE_WORD)
DEFAULT_THRESHOLD = rules.DEFAULT_THRESHOLD
PREFIX_TOKENS = rules.PREFIX_TOKENS
MIN_VARIABLE_WORDS = rules.MIN_VARIABLE_WORDS
KEPT_WORDS = rules.KEPT_WORDS
HEAD_MARK = rules.HEAD_MARK
TAIL_MARK = rules.TAIL_MARK
_TAIL_SEP = f" {TAIL_MARK} "


def _similarity(template: Sequence[str], tokens: Sequence[str]) -> float:
    if not tokens:
        return 1.0
    if any(
        a != b and a in KEPT_WORDS and b in KEPT_WORDS
        for a, b in zip(template, tokens, strict=True)
    ):
        return -1.0
    same = sum(1 for a, b in zip(template, tokens, strict=True) if a == b and a != WILDCARD)
    # Placeholder positions count as agreeing when both hold the same placeholder type.
    return same / len(tokens)


def mine(
    sequences: Iterable[tuple[Sequence[str], int]],
    threshold: float = DEFAULT_THRESHOLD,
    names: frozenset[frozenset[str]] = frozenset(),
    seen: list[tuple[frozenset[str], tuple[str, ...]]] | None = None,
) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Template of every distinct sequence in one bucket (same length), given their counts.

    `names` and `seen` are for `_split_on_words`: word sets known to be the values of one
    variable, and a list that collects the word sets a cluster was cut on."""
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
    clusters: dict[int, list[tuple[str, ...]]] = {}
    for seq in ordered:
        clusters.setdefault(member_of[seq], []).append(seq)
    out: dict[tuple[str, ...], tuple[str, ...]] = {}
    for members in clusters.values():
        for part in _split_on_words(members, names, seen, counts):
            shared = _template_of(part)
            out.update((seq, shared) for seq in part)
    return out


def _template_of(members: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    """Each position's shared token, or `<*>` where the members differ."""
    first = members[0]
    return tuple(
        token if all(m[pos] == token for m in members) else WILDCARD
        for pos, token in enumerate(first)
    )


def _names_events(values: frozenset[str]) -> bool:
    """Whether the values of one varying position read as constants naming distinct events
    (rules.MIN_VARIABLE_WORDS, rules.MAX_STATE_WORDS): a few plain words or names written in
    code, or a few more capitalised words."""
    if len(values) < 2:
        return False
    if len(values) < MIN_VARIABLE_WORDS and all(
        _WORD.match(v)
        or (_CODE_NAME.match(v) and (v != v.lower() or (v[0] == "'" and "." not in v)))
        for v in values
    ):
        return True
    return len(values) <= rules.MAX_STATE_WORDS and all(_STATE_WORD.match(v) for v in values)


def _split_on_words(
    members: list[tuple[str, ...]],
    names: frozenset[frozenset[str]] = frozenset(),
    seen: list[tuple[frozenset[str], tuple[str, ...]]] | None = None,
    counts: dict[tuple[str, ...], int] | None = None,
) -> list[list[tuple[str, ...]]]:
    """A cluster cut apart where a varying position holds words that name events.

    Greedy similarity merges `stored as bytes` with `stored as values`, and `VM Started` with
    `VM Paused`: one word out of ten differs. Variables nearly always hold digits or
    punctuation, or take many values, so a position whose few values are words
    (`_names_events`) is read as a constant, as Brain reads a word's variability from the data.
    Except the word sets in `names`: those alternate in several events (`Failed password for
    root` / `git`, `user=root` / `git`), so they are the values of a variable, a user's name.
    Each set a cluster is cut on is added to `seen`, with the place it was cut in. Two
    values of any spelling that each recur in several messages (`_each_recurs`, over
    `counts`) name events too.
    """
    if len(members) < 2:
        return [members]
    for pos in range(len(members[0])):
        values = frozenset(m[pos] for m in members)
        if values not in names and (_names_events(values) or _each_recurs(members, pos, counts)):
            if seen is not None:
                seen.append((values, _context(members, pos)))
            parts: dict[str, list[tuple[str, ...]]] = {}
            for m in members:
                parts.setdefault(m[pos], []).append(m)
            return [
                p for v in sorted(parts) for p in _split_on_words(parts[v], names, seen, counts)
            ]
    return [members]


def _each_recurs(
    members: list[tuple[str, ...]], pos: int, counts: dict[tuple[str, ...], int] | None
) -> bool:
    """Whether one position holds exactly rules.RECURRING_VALUES values, whatever their
    spelling (`websocket.connect` / `websocket.http.response.body`), each in at least
    rules.MIN_RECURRENCE messages (`counts`): a variable shows more values as messages
    come, while the words of two events each recur consistently."""
    if counts is None:
        return False
    seen: dict[str, int] = {}
    for m in members:
        if m[pos] in PLACEHOLDERS:
            return False
        seen[m[pos]] = seen.get(m[pos], 0) + counts[m]
    return len(seen) == rules.RECURRING_VALUES and min(seen.values()) >= rules.MIN_RECURRENCE


def _context(members: list[tuple[str, ...]], pos: int) -> tuple[str, ...]:
    """Where a cluster was cut: its template without the cut position and without the
    bucket's leading words. Two buckets that differ only by a variable's value
    (`No sku <*> was found`, `No user <*> was found`) are one place, not two."""
    template = _template_of(members)
    return tuple(
        WILDCARD if i < PREFIX_TOKENS else token for i, token in enumerate(template) if i != pos
    )


def _bucket(tokens: Sequence[str]) -> tuple[int, str]:
    """Drain's first levels: the token count, then the first tokens while they are plain words.

    A token that is not a plain word (`com.apple.cts.daily`, `<ID>`) is as likely a variable
    as a constant, so it ends the prefix rather than split the bucket; the similarity decides.
    """
    head: list[str] = []
    for token in tokens[:PREFIX_TOKENS]:
        if not _WORD.match(token):
            break
        head.append(token)
    return len(tokens), " ".join(head)


def _skeleton(template: Sequence[str]) -> tuple[str, ...]:
    """The template's constants in order, every run of variables one `<*>`."""
    out: list[str] = []
    for token in template:
        if token in PLACEHOLDERS:
            if out and out[-1] == WILDCARD:
                continue
            token = WILDCARD
        out.append(token)
    return tuple(out)


def _collapse(template: Sequence[str]) -> tuple[str, ...]:
    """Runs of variables as one: their shared placeholder, or `<*>` when they differ."""
    out: list[str] = []
    for token in template:
        if token in PLACEHOLDERS and out and out[-1] in PLACEHOLDERS:
            if out[-1] != token:
                out[-1] = WILDCARD
            continue
        out.append(token)
    return tuple(out)


def _across_buckets(
    weight: dict[tuple[str, ...], int], threshold: float
) -> dict[tuple[str, ...], tuple[str, ...]]:
    """The templates of one length mined again together, across leading words.

    The bucket's leading words keep events apart cheaply, but a variable in the first places
    (`No <name> extension was found`, `<name> must be bytes`) puts each value in a bucket of
    its own. Here a template joins the most similar cluster (at the same threshold) that holds
    no template of its own bucket, so what a bucket kept apart stays apart; the cut on words
    that name events (`_split_on_words`) keeps apart leading words that are few, and a merge
    must keep rules.MIN_STEM_CONSTANTS constants (`boot (command <NUM>)` and
    `halt (command <NUM>)` share too little to be one event)."""
    by_length: dict[int, list[tuple[str, ...]]] = {}
    for template in sorted(weight, key=lambda t: (-weight[t], t)):
        by_length.setdefault(len(template), []).append(template)
    out: dict[tuple[str, ...], tuple[str, ...]] = {}
    for templates in by_length.values():
        clusters: list[tuple[list[str], set[str], list[tuple[str, ...]]]] = []
        # Which clusters hold a token in a place: only those can reach a positive threshold,
        # so a template is compared with them alone (the same choice as comparing with all,
        # first cluster first on ties), not with every cluster of its length.
        holding: dict[tuple[int, str], set[int]] = {}
        for template in templates:
            bucket = _bucket(template)[1]
            if template and threshold > 0:
                candidates: set[int] = set()
                for place in enumerate(template):
                    candidates |= holding.get(place, set())
            else:
                candidates = set(range(len(clusters)))
            best, best_sim = -1, -1.0
            for i in sorted(candidates):
                if bucket in clusters[i][1]:
                    continue
                sim = _similarity(clusters[i][0], template)
                if sim > best_sim:
                    best, best_sim = i, sim
            if best >= 0 and best_sim >= threshold:
                shared, buckets, members = clusters[best]
                for pos, token in enumerate(template):
                    if shared[pos] != token:
                        holding.get((pos, shared[pos]), set()).discard(best)
                        shared[pos] = WILDCARD
                buckets.add(bucket)
                members.append(template)
            else:
                for place in enumerate(template):
                    if place[1] != WILDCARD:
                        holding.setdefault(place, set()).add(len(clusters))
                clusters.append((list(template), {bucket}, [template]))
        for _, _, members in clusters:
            for part in _split_on_words(members):
                merged = _template_of(part) if len(part) > 1 else part[0]
                keep = _constants(" ".join(merged)) >= rules.MIN_STEM_CONSTANTS
                out.update((t, merged if keep else t) for t in part)
    return out


def _mine_buckets(
    buckets: dict[tuple[int, str], list[tuple[list[str], int]]], threshold: float
) -> dict[str, tuple[str, ...]]:
    """`mine` over every bucket, twice when needed: a set of words that named events in more
    than one cluster or position (rules.MIN_NAME_REUSE) is a variable's values, as a user name
    recurs wherever a name goes, while the words naming events belong to one message; the
    second pass keeps such sets as variables."""
    names: frozenset[frozenset[str]] = frozenset()
    while True:
        seen: list[tuple[frozenset[str], tuple[str, ...]]] = []
        mined: dict[str, tuple[str, ...]] = {}
        for key in sorted(buckets):
            for seq, template in mine(buckets[key], threshold, names, seen).items():
                mined[" ".join(seq)] = _collapse(template)
        places: dict[frozenset[str], set[tuple[str, ...]]] = {}
        for values, context in seen:
            places.setdefault(values, set()).add(context)
        reused = frozenset(v for v, p in places.items() if len(p) >= rules.MIN_NAME_REUSE)
        if not reused:
            return mined
        names |= reused


def _constants(template: str) -> int:
    return sum(1 for t in template.split(" ") if t and t not in PLACEHOLDERS and t != TAIL_MARK)
