"""Deterministic template mining of masked token sequences (Drain-style, plus merges).

`mine_all` takes every distinct sequence with its count at once: sequences are bucketed by
token count and leading plain words (Drain's fixed-depth tree), clustered greedily inside each
bucket (`mine`: a sequence joins the most similar template when the share of positions holding
the same token reaches the threshold; differing positions become `<*>`), clusters are cut where
a position holds a few words that name events (unless the same words vary so in several
events: then they are a variable's values), and templates with the same constants merge
across lengths. The thresholds are in rules.py. `with_context` adds the description. Inputs
are aggregated and sorted, so the result does not depend on how the data is partitioned or in
which order it arrives.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from deadletter.pipeline import rules
from deadletter.pipeline.purity import CONTEXT_SEPARATOR, split_hidden
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


def pattern_id(template: str, signature: str) -> str:
    """Stable id of a pattern: the same template and signature give the same id on every run."""
    digest = hashlib.sha256(f"{template}\n{signature}".encode()).hexdigest()
    return f"p-{digest[:12]}"


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


def _constants(template: str) -> int:
    return sum(1 for t in template.split(" ") if t and t not in PLACEHOLDERS and t != TAIL_MARK)


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


def _runs(
    general: Sequence[str], template: Sequence[str], free: Sequence[bool] = ()
) -> list[tuple[str, ...]] | None:
    """What each variable of `general` holds in `template`, when `template` is `general` with
    each variable holding a run of tokens: one token of any kind, or a phrase of plain words
    (several, or none); None when it is not. A run that holds a variable among its words
    (`invalid user <*>`) has a structure of its own, so it is another event's text, except in
    the variables marked `free` (known to hold free text), which take any run."""
    length = len(template)
    slot = -1
    # reach[i][j]: how `general[:i]` produces `template[:j]` (the runs so far), if it can.
    reach: list[list[tuple[str, ...]] | None] = [[]] + [None] * length
    for token in general:
        slot += token in PLACEHOLDERS
        after: list[list[tuple[str, ...]] | None] = [None] * (length + 1)
        for j, runs in enumerate(reach):
            if runs is None:
                continue
            if token not in PLACEHOLDERS:
                if j < length and template[j] == token and after[j + 1] is None:
                    after[j + 1] = runs
                continue
            if slot < len(free) and free[slot]:
                for k in range(j, length + 1):
                    if after[k] is None:
                        after[k] = [*runs, tuple(template[j:k])]
                continue
            if after[j] is None:
                after[j] = [*runs, ()]
            if j < length and after[j + 1] is None:
                after[j + 1] = [*runs, (template[j],)]
            k = j
            while k < length and template[k] not in PLACEHOLDERS:
                k += 1
                if after[k] is None:
                    after[k] = [*runs, tuple(template[j:k])]
        reach = after
    return reach[length]


def _filled_slots(
    weight: dict[tuple[str, ...], int],
    members: dict[tuple[str, ...], dict[tuple[str, ...], int]],
    threshold: float,
) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Templates that are another template with a phrase (several plain words, or none) in
    one of its variables join it: `<*> is not a valid range` has many one-word values, and
    `Lorem ipsum dolor is not a valid range` or ` is not a valid range` is the same event with
    a phrase, or nothing, where a name usually goes. The general template keeps
    rules.MIN_FRAME_CONSTANTS constants, which make up at least `threshold` of the other's
    tokens (Drain's share); a template whose variables all take one token is the positional
    rules' to judge (`_split_on_words`), so words that name events stay apart; and a variable
    whose few values each recur (`_slot_kinds`, over the general template's `members`) names
    events, so it takes no phrase."""
    out = {template: template for template in weight}
    general = [
        t
        for t in weight
        if any(token in PLACEHOLDERS for token in t)
        and _constants(" ".join(t)) >= rules.MIN_FRAME_CONSTANTS
    ]
    if not general:
        return out
    # The most specific first (most constants), then the most frequent.
    general.sort(key=lambda t: (-_constants(" ".join(t)), -weight[t], t))
    # Each general template under its first constant: only a template holding that token can
    # fit it, so a template is compared with those alone, in the same order.
    rank = {t: i for i, t in enumerate(general)}
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for candidate in general:
        first = next(t for t in candidate if t not in PLACEHOLDERS)
        by_first.setdefault(first, []).append(candidate)
    kinds: dict[tuple[str, ...], list[str]] = {}
    for template in sorted(weight, key=lambda t: (weight[t], t)):
        tokens = set(template)
        reachable = sorted(
            (c for token in tokens for c in by_first.get(token, [])), key=rank.__getitem__
        )
        for candidate in reachable:
            if candidate == template or len(candidate) == len(template):
                continue
            constants = [t for t in candidate if t not in PLACEHOLDERS]
            if not set(constants) <= tokens:
                continue
            if candidate not in kinds:
                kinds[candidate] = _slot_kinds(candidate, members.get(candidate, {}))
            kind = kinds[candidate]
            runs = _runs(candidate, template, [k == FREE for k in kind])
            if runs is None:
                continue
            filled = [k for run, k in zip(runs, kind, strict=True) if len(run) != 1]
            if FIXED in filled:
                continue
            # A slot known to hold free text takes a run of any length; elsewhere the
            # general template's constants must make most of the other's tokens.
            if any(k != FREE for k in filled) and len(constants) < threshold * len(template):
                continue
            out[template] = candidate
            break
    # A general template that joined another follows it.
    for template in out:
        seen = {template}
        while out[out[template]] != out[template] and out[template] not in seen:
            seen.add(out[template])
            out[template] = out[out[template]]
    return out


FIXED = "fixed"
FREE = "free"


def _slot_kinds(template: tuple[str, ...], members: dict[tuple[str, ...], int]) -> list[str]:
    """For each variable of `template`, over its members: FIXED when its values are few
    (under rules.MIN_VARIABLE_WORDS) and each seen more than once, words that name events
    (`"websocket.connect"` / `"websocket.http.response.body"`) rather than a variable's
    values; FREE when some value is a run of several tokens or none, free text; else ""."""
    places = sum(1 for t in template if t in PLACEHOLDERS)
    values: list[dict[tuple[str, ...], int]] = [{} for _ in range(places)]
    for tokens, n in members.items():
        runs = _runs(template, tokens, [True] * places)
        if runs is None:
            continue
        for seen, run in zip(values, runs, strict=True):
            seen[run] = seen.get(run, 0) + n
    return [
        FREE
        if any(len(run) != 1 for run in seen)
        else FIXED
        if 1 < len(seen) < MIN_VARIABLE_WORDS and min(seen.values()) > 1
        else ""
        for seen in values
    ]


def _free_runs(weight: dict[tuple[str, ...], int]) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Templates that differ only in a run of words between a shared start and end (either
    may be empty), where that run varies freely (`_varies_freely`, in two lengths or more,
    no word common to all), are one template with `<*>` there: an error text or a phrase of
    several words written without quotes (`Writer "x" not found. No such file or
    directory`). The start and the end together keep rules.MIN_FRAME_CONSTANTS constants, so
    a variable run is always framed by the words that name the event."""
    frames: dict[tuple[tuple[str, ...], tuple[str, ...]], dict[tuple[str, ...], int]] = {}
    for template, n in weight.items():
        size = len(template)
        # Frames cost the square of the length: long lines are logs more than messages.
        if size > rules.MAX_FRAME_TOKENS:
            continue
        constant = [0]
        for token in template:
            constant.append(constant[-1] + (token not in PLACEHOLDERS))
        for i in range(size):
            prefix = template[:i]
            for j in range(size - i):
                suffix = template[size - j :]
                if constant[i] + constant[size] - constant[size - j] < rules.MIN_FRAME_CONSTANTS:
                    continue
                middles = frames.setdefault((prefix, suffix), {})
                middle = template[i : size - j]
                middles[middle] = middles.get(middle, 0) + n
    out = {template: template for template in weight}
    done: set[tuple[str, ...]] = set()
    # The frame shared by the most templates first (the run it leaves is the widest), then
    # the longest: a frame that took the first words of the run would split it.
    order = sorted(frames, key=lambda f: (-len(frames[f]), -len(f[0]) - len(f[1]), f))
    for prefix, suffix in order:
        middles = {
            middle: n
            for middle, n in frames[prefix, suffix].items()
            if (*prefix, *middle, *suffix) not in done
        }
        # Runs of one length are the positional rules' to judge (`_split_on_words`), and
        # runs that all hold one same word are variants of one structure (`... to build
        # instance` / `to destroy the instance`), not free text.
        if (
            len({len(m) for m in middles}) < 2
            or not _varies_freely(middles)
            or _shared_word(list(middles))
        ):
            continue
        merged = _collapse((*prefix, WILDCARD, *suffix))
        for middle in middles:
            template = (*prefix, *middle, *suffix)
            out[template] = merged
            done.add(template)
    return out


def _shared_word(runs: list[tuple[str, ...]]) -> bool:
    common = {t for t in runs[0] if t not in PLACEHOLDERS}
    for run in runs[1:]:
        common &= set(run)
    return bool(common)


def _varies_freely(values: dict[tuple[str, ...], int]) -> bool:
    """Many values, or a few of which at least half were seen once: phrases that each recur
    (`Took <DUR> to spawn the instance` / `to build instance`) name events."""
    if len(values) >= rules.MANY_VALUES:
        return True
    once = sum(1 for n in values.values() if n == 1)
    return len(values) >= rules.MIN_VARIANT_VALUES and 2 * once >= len(values)


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
