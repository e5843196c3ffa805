"""Runs of words that hold one variable: templates that differ only in a phrase between a
shared start and end (`_free_runs`), and templates that are another with a phrase, or
nothing, in one of its variables (`_filled_slots`). mining.py applies them once the buckets
are mined.
"""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.pipeline import rules
from deadletter.pipeline.drain import MIN_VARIABLE_WORDS, WILDCARD, _collapse, _constants
from deadletter.pipeline.text import PLACEHOLDERS


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
    joined: dict[tuple[str, ...], tuple[tuple[str, ...], list[tuple[str, ...]], list[str]]] = {}
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
            joined[template] = (candidate, runs, kind)
            break
    _own_endings(out, joined, weight)
    # A general template that joined another follows it.
    for template in out:
        seen = {template}
        while out[out[template]] != out[template] and out[template] not in seen:
            seen.add(out[template])
            out[template] = out[out[template]]
    return out


FIXED = "fixed"
FREE = "free"


def _own_endings(
    out: dict[tuple[str, ...], tuple[str, ...]],
    joined: dict[tuple[str, ...], tuple[tuple[str, ...], list[tuple[str, ...]], list[str]]],
    weight: dict[tuple[str, ...], int],
) -> None:
    """A template that joined a variable of a general template, which its own members fill
    with one token, with a run ending with a word after which another template has the same
    structure (`cannot combine <*> and <*>` taking `Series and ndarray objects`, while
    `cannot combine DataFrame and <*> objects` is there too): that word is a constant of a
    structure of their own, `cannot combine <*> and <*> objects`, another failure, which they
    join instead. A phrase of free text seldom ends the same way twice."""
    for template, (candidate, runs, kind) in sorted(joined.items()):
        for slot, run in enumerate(runs):
            if kind[slot] != "" or len(run) < 2 or run[-1] in PLACEHOLDERS:
                continue
            at = [i for i, token in enumerate(candidate) if token in PLACEHOLDERS][slot]
            own = (*candidate[: at + 1], run[-1], *candidate[at + 1 :])
            constants = {t for t in own if t not in PLACEHOLDERS}
            family = [
                other
                for other in weight
                if other not in (template, candidate)
                and constants <= set(other)
                and _differs_before(_runs(own, other), run, slot)
            ]
            if not family:
                continue
            out.setdefault(own, own)
            for member in (template, *family):
                out[member] = own
            break


def _differs_before(runs: list[tuple[str, ...]] | None, run: tuple[str, ...], slot: int) -> bool:
    """Whether `runs` (another template read against the structure) exist and hold at `slot`
    something other than what `run` holds before its last word."""
    return runs is not None and runs[slot] != run[:-1]


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
    """Many values, not all of them recurring, or a few of which at least half were seen
    once: phrases that each recur (`Took <DUR> to spawn the instance` / `to build instance`;
    `pq: cannot cast type integer to` / `pq: invalid input syntax for type` before
    `timestamp with time zone`) name events, however many there are."""
    if len(values) >= rules.MANY_VALUES:
        return not _each_recurs(values)
    once = sum(1 for n in values.values() if n == 1)
    return len(values) >= rules.MIN_VARIANT_VALUES and 2 * once >= len(values)


def _each_recurs(values: dict[tuple[str, ...], int]) -> bool:
    """Whether the runs fall into structures that each recur: runs of one length that start
    with one word are variants of one structure (`cannot cast type integer to` / `boolean`),
    and a structure seen in rules.MIN_RECURRENCE messages or more names an event. Free text
    always has runs seen once or twice."""
    kinds: dict[tuple[str, int], int] = {}
    for run, n in values.items():
        key = (run[0] if run else "", len(run))
        kinds[key] = kinds.get(key, 0) + n
    return min(kinds.values()) >= rules.MIN_RECURRENCE
