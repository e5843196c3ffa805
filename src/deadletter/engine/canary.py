"""A redrive's canary: which dead letters go first, and what their fate decides.

The sample is drawn when the task starts, across the kinds of dead letter the selection holds,
so that a minority failure inside it is among the sample rather than behind it in the DLQ's
order. For a failure pattern the kinds are the values its members hold at each variable
position of the template (`The <*> is invalid <*>`: `format` and `repartition` at the first);
for any other selection, the error class and the shape of the error text. The draw first takes
one dead letter of every kind (the rarest first), then one of every combination of kinds not
yet in the sample, then the rest at random; every choice comes from a seeded generator, so a
task's sample is the same on a rerun. What the sample covers is kept with the task and shown.

The canary is a small state machine beside the batch mover (`redrive.step` asks `state`):

    SAMPLING --(the drawn sample moved)--> WATCHING --(too many died again)--> PAUSED
        |                                      \\--(the watch is over)--------> PASSED
        \\--(nothing of the sample could move)-------------------------------> PASSED

The transitions (`sampled`, `watched`) are pure functions of the canary; reading the DLQ and
moving messages stay with the mover.
"""

from __future__ import annotations

import enum
import hashlib
import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from deadletter.domain import errors
from deadletter.domain.model import DeadLetterFilter
from deadletter.domain.provenance import Provenance
from deadletter.domain.redrive import (
    MAX_CANARY_IDS_RECORDED,
    MAX_CANARY_SIZE,
    MAX_CANARY_WATCH,
    Canary,
    CanaryDecision,
    RedriveTask,
)
from deadletter.engine import selection
from deadletter.storage.base import Transaction

# The most dead letters the draw reads to learn the kinds; a larger selection is read in
# MAX_SCAN // SCAN_RUN runs spread over the DLQ's numbering.
MAX_SCAN = 20_000
SCAN_RUN = 500
# What one statement of the scan reads (a statement with a long id list costs per call).
SCAN_BATCH = 2500
# A value is a kind of its own when at least this share of the members (and two of them)
# hold it at its position; rarer values count together as one kind ("other values").
KIND_SHARE = 0.005
OTHER = "\x00other"
UNMATCHED = "\x00unmatched"
# A pattern whose stored purity score is under this is impure (when it carries no flag).
PURE_AT_LEAST = 0.9

# A dead letter as the draw reads it: its id and its provenance (its error).
Member = tuple[str, Provenance | None]


class State(enum.Enum):
    SAMPLING = "sampling"
    WATCHING = "watching"
    PASSED = "passed"
    PAUSED = "paused"


def state(c: Canary | None) -> State:
    """Where a task's canary stands; a task without one has nothing to wait for (PASSED)."""
    if c is None or c.decision is CanaryDecision.CONTINUED:
        return State.PASSED
    if c.decision is CanaryDecision.PAUSED:
        return State.PAUSED
    return State.SAMPLING if c.watch_until is None else State.WATCHING


def check(canary: Canary) -> None:
    """A canary's request is whole and in range before a task is written."""
    if (canary.count is None) == (canary.percent is None):
        raise errors.InvalidInput("a canary is a number of dead letters or a percentage of them")
    if canary.count is not None and not 1 <= canary.count <= MAX_CANARY_SIZE:
        raise errors.InvalidInput(f"a canary takes 1 to {MAX_CANARY_SIZE} dead letters")
    if canary.percent is not None and not 0 < canary.percent <= 100:
        raise errors.InvalidInput("a canary's percentage is more than 0 and at most 100")
    if not 0 < canary.watch <= MAX_CANARY_WATCH:
        raise errors.InvalidInput(
            f"a canary's watch is more than 0 and at most {MAX_CANARY_WATCH} s"
        )
    if not 0 <= canary.max_redeath <= 100:
        raise errors.InvalidInput("a canary's max_redeath is a percentage, 0 to 100")


def size_of(canary: Canary, to_move: int) -> int:
    """How many dead letters the sample takes, at most all the task selects and at most
    MAX_CANARY_SIZE: a percentage rounds up, so it is never empty."""
    if canary.count is not None:
        return min(canary.count, to_move)
    return min(math.ceil(to_move * (canary.percent or 0) / 100), MAX_CANARY_SIZE)


# Starting: the draw


def started(tx: Transaction, canary: Canary, task: RedriveTask, now: float) -> Canary:
    """The canary of a new task, its sample drawn from what the task selects: refused over a
    pattern flagged impure unless forced."""
    pattern = _pattern(tx, task.project, task.dlq, canary.pattern_id)
    if pattern is not None and not canary.force and impure(pattern):
        raise errors.PatternImpure(
            f"pattern {canary.pattern_id} is flagged impure (it may mix failures of different"
            " causes): a canary drawn from it cannot vouch for the rest; split it, or redrive"
            " with force"
        )
    seed = canary.seed if canary.seed is not None else seed_of(task.id)
    canary = replace(canary, size=size_of(canary, task.to_move), seen_seq=task.max_seq, seed=seed)
    if canary.size == 0:  # nothing selected, nothing to watch: the task ends at its step
        return replace(canary, decision=CanaryDecision.CONTINUED, decided_at=now)
    members = _scan(tx, task, now)
    drawn_by, profiles = profiles_of(members, pattern)
    d = draw(profiles, canary.size, seed)
    return replace(
        canary,
        plan=d.ids,
        drawn_by=drawn_by,
        kinds=d.kinds,
        kinds_covered=d.kinds_covered,
        combinations=d.combinations,
        combinations_covered=d.combinations_covered,
        coverage=coverage_of(d, drawn_by, read=len(members), selected=task.to_move),
    )


def profiles_of(
    members: Sequence[Member], pattern: dict[str, Any] | None
) -> tuple[str, dict[str, tuple[str, ...]]]:
    """What the draw goes by, and each member's kinds: the pattern's values where its
    template reads the members, else their error classes and texts, else nothing."""
    template = pattern.get("template") if pattern is not None else None
    if isinstance(template, str) and template:
        profiles = pattern_profiles(members, template)
        if any(p != (UNMATCHED,) for p in profiles.values()):
            return "pattern", profiles
    if any(_error_of(m) for m in members):
        return "errors", error_profiles(members)
    return "random", {mid: () for mid, _ in members}


def seed_of(task_id: str) -> int:
    return int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:4], "big")


def impure(pattern: dict[str, Any]) -> bool:
    """Whether the analysis flagged a stored pattern as mixing failures: its `impure` flag
    when it has one, else its `purity` score (a number, or `{"score": ...}`) under
    PURE_AT_LEAST. A pattern that says nothing of its purity is taken as pure."""
    flag = pattern.get("impure")
    purity = pattern.get("purity")
    if isinstance(purity, dict):
        flag = purity.get("impure", flag)
        purity = purity.get("score")
    if isinstance(flag, bool):
        return flag
    return (
        isinstance(purity, int | float) and not isinstance(purity, bool) and purity < PURE_AT_LEAST
    )


def _pattern(
    tx: Transaction, project: str, dlq: str, pattern_id: str | None
) -> dict[str, Any] | None:
    if pattern_id is None:
        return None
    return next((p for p in tx.get_patterns(project, dlq) if p.get("id") == pattern_id), None)


def _scan(tx: Transaction, task: RedriveTask, now: float) -> list[Member]:
    """The selection's dead letters the draw chooses from: all of them up to MAX_SCAN, else
    runs of SCAN_RUN spread evenly over the DLQ's numbering."""
    runs = 1 if task.to_move <= MAX_SCAN else MAX_SCAN // SCAN_RUN
    low = 0
    if runs > 1:  # the DLQ's numbers are the store's: spread from the selection's first
        first, _, _ = _page(tx, task, now=now, max_seq=task.max_seq, limit=1, after=0)
        low = first[0][1] - 1 if first else 0
    starts = [low + (task.max_seq - low) * i // runs for i in range(runs)]
    found: dict[str, Provenance | None] = {}
    for i, after in enumerate(starts):
        end = starts[i + 1] if i + 1 < runs else task.max_seq
        want = MAX_SCAN if runs == 1 else SCAN_RUN
        done = False
        while want > 0 and after < end and not done:
            limit = min(want, SCAN_BATCH)
            rows, after, done = _page(tx, task, now=now, max_seq=end, limit=limit, after=after)
            found.update((mid, p) for mid, _, p in rows)
            want -= len(rows)
    return list(found.items())


def _page(
    tx: Transaction, task: RedriveTask, *, now: float, max_seq: int, limit: int, after: int
) -> tuple[list[tuple[str, int, Provenance | None]], int, bool]:
    """What the task selects of the next `limit` dead letters after `after`, up to `max_seq`:
    (id, seq, provenance) each; the seq read up to; whether the store holds no more. A filter
    the engine evaluates (an error's text, an attribute, the body) reads whole dead letters."""
    where = task.filter
    if not where.in_engine:
        rows = tx.dead_letter_provenances(
            task.project, task.dlq, now=now, where=where.for_store(), max_seq=max_seq,
            limit=limit, after_seq=after,
        )  # fmt: skip
        return rows, rows[-1][1] if rows else after, len(rows) < limit
    page = tx.dead_letters(
        task.project, task.dlq, now=now, where=where.for_store(), max_seq=max_seq,
        limit=limit, lock=False, after_seq=after,
    )  # fmt: skip
    rows = [(m.id, m.seq, m.provenance) for m in page if selection.matches(m, where)]
    return rows, page[-1].seq if page else after, len(page) < limit


# Kinds


def _error_of(m: Member) -> str:
    p = m[1]
    if p is None:
        return ""
    return p.error or p.description or ""


_SPLIT = re.compile(r"[\s,;=()\[\]{}|]+")
_EDGE = ".:!?\"'`"
_PLACEHOLDER = re.compile(r"<(?:[A-Z]+|\*)>:?")
_CONTEXT = " :: "


def tokens_of(text: str) -> list[str]:
    return [t for t in (w.strip(_EDGE) for w in _SPLIT.split(text)) if t]


# A template as the draw reads it: its tokens, None for each variable position.
Template = tuple[str | None, ...]


def template_of(template: str) -> Template:
    """A stored template's tokens, trimmed as `tokens_of` trims an error's, so that a template
    without punctuation still reads the raw text; each placeholder None."""
    out: list[str | None] = []
    for token in template.split(_CONTEXT, 1)[0].split(" "):
        if _PLACEHOLDER.fullmatch(token):
            out.append(None)
        elif token.strip(_EDGE) and token != "::":
            out.append(token.strip(_EDGE))
    return tuple(out)


def read(tokens: Sequence[str], template: Template) -> tuple[str, ...] | None:
    """The values `tokens` hold at the template's variable positions, or None when the
    template does not read them. A value runs up to the first place where the constant that
    follows it appears (one token when a variable follows instead; the rest of the text when
    it is the last), and may be empty (a quoted `'}'` is no token once split): one pass,
    however many variables, with no backtracking."""
    values: list[str] = []
    i = 0
    for j, want in enumerate(template):
        if want is not None:
            if i >= len(tokens) or tokens[i] != want:
                return None
            i += 1
            continue
        end = _value_end(tokens, i, template[j + 1 :])
        if end < 0:
            return None
        values.append(" ".join(tokens[i:end]))
        i = end
    return tuple(values) if i == len(tokens) else None


def _value_end(tokens: Sequence[str], i: int, rest: Template) -> int:
    """Where the value starting at `i` ends, given what of the template follows it; -1 when
    the constant that follows never appears."""
    if not rest:
        return len(tokens)
    if rest[0] is None:
        return min(i + 1, len(tokens))
    return next((k for k in range(i, len(tokens)) if tokens[k] == rest[0]), -1)


def pattern_profiles(members: Sequence[Member], template: str) -> dict[str, tuple[str, ...]]:
    """Each member's values at the template's variable positions, rare values folded into
    OTHER; a member the template does not read is a kind of its own."""
    shape = template_of(template)
    values: dict[str, tuple[str, ...] | None] = {}  # by error text: many members share one
    raw: dict[str, tuple[str, ...] | None] = {}
    for m in members:
        text = _error_of(m)
        if text not in values:
            values[text] = read_text(text, shape)
        raw[m[0]] = values[text]
    return folded(raw)


def read_text(text: str, template: Template) -> tuple[str, ...] | None:
    """`read` of an error text: of the first of its lines the template reads (an error with
    a stack trace or a detail line is grouped by its headline), else of the whole text."""
    if "\n" in text:
        lines = (read(tokens_of(line), template) for line in text.splitlines() if line.strip())
        found = next((v for v in lines if v is not None), None)
        if found is not None:
            return found
    return read(tokens_of(text), template)


def _shape(text: str) -> str:
    """An error text's shape: its first words, those holding a digit or quoted as one mark."""
    words = re.sub(r"(['\"`]).*?\1", "'…'", text).split()[:12]
    return " ".join("#" if re.search(r"\d", w) else w for w in words)


def error_profiles(members: Sequence[Member]) -> dict[str, tuple[str, ...]]:
    """Each member's error class and the shape of its error text, rare ones folded."""
    shapes: dict[str, str] = {}
    raw: dict[str, tuple[str, ...] | None] = {}
    for m in members:
        cls = (m[1].error_class if m[1] else None) or ""
        text = _error_of(m)
        if text not in shapes:
            shapes[text] = _shape(text)
        raw[m[0]] = (cls, shapes[text])
    return folded(raw)


def folded(raw: dict[str, tuple[str, ...] | None]) -> dict[str, tuple[str, ...]]:
    """Values that fewer than KIND_SHARE of the members hold at a position become OTHER."""
    width = max((len(v) for v in raw.values() if v is not None), default=0)
    least = max(2, math.ceil(len(raw) * KIND_SHARE))
    counts: list[dict[str, int]] = [{} for _ in range(width)]
    for values in raw.values():
        for i, v in enumerate(values or ()):
            counts[i][v] = counts[i].get(v, 0) + 1
    out: dict[str, tuple[str, ...]] = {}
    for mid, values in raw.items():
        if values is None:
            out[mid] = (UNMATCHED,)
        else:
            out[mid] = tuple(v if counts[i][v] >= least else OTHER for i, v in enumerate(values))
    return out


# The draw


@dataclass(frozen=True)
class Draw:
    ids: tuple[str, ...]
    # Kinds: (position, value) pairs the members hold; combinations: distinct profiles.
    kinds: int
    kinds_covered: int
    combinations: int
    combinations_covered: int


def draw(profiles: Mapping[str, tuple[str, ...]], n: int, seed: int) -> Draw:
    """`n` members: one of every kind first (the rarest first), then one of every combination
    not yet drawn (the rarest first), then the rest at random; all from `seed`."""
    rng = random.Random(seed)
    by_combo: dict[tuple[str, ...], list[str]] = {}
    for mid in sorted(profiles):
        by_combo.setdefault(profiles[mid], []).append(mid)
    for ids in by_combo.values():
        rng.shuffle(ids)
    chosen = [by_combo[combo][0] for combo in _combinations_first(by_combo, n)]
    picked = set(chosen)
    rest = [mid for ids in by_combo.values() for mid in ids if mid not in picked]
    chosen += rng.sample(rest, min(max(n - len(chosen), 0), len(rest)))
    return Draw(
        ids=tuple(chosen),
        kinds=len({k for combo in by_combo for k in _kinds(combo)}),
        kinds_covered=len({k for mid in chosen for k in _kinds(profiles[mid])}),
        combinations=len(by_combo),
        combinations_covered=len({profiles[mid] for mid in chosen}),
    )


def _combinations_first(
    by_combo: dict[tuple[str, ...], list[str]], n: int
) -> list[tuple[str, ...]]:
    """At most `n` combinations to take one member of: for every kind not yet covered, the
    rarest first, its rarest combination; then every combination not yet taken, the rarest
    first. No combination twice: one that is taken covers all its kinds."""
    combos_of: dict[tuple[int, str], list[tuple[str, ...]]] = {}
    for combo in by_combo:
        for kind in _kinds(combo):
            combos_of.setdefault(kind, []).append(combo)

    def rarity(combo: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
        return len(by_combo[combo]), combo

    taken: dict[tuple[str, ...], None] = {}
    covered: set[tuple[int, str]] = set()
    kinds = sorted(combos_of, key=lambda k: (sum(len(by_combo[c]) for c in combos_of[k]), k))
    for kind in kinds:
        if len(taken) < n and kind not in covered:
            combo = min(combos_of[kind], key=rarity)
            taken[combo] = None
            covered.update(_kinds(combo))
    for combo in sorted(by_combo, key=rarity):
        if len(taken) < n:
            taken.setdefault(combo, None)
    return list(taken)


def _kinds(combo: tuple[str, ...]) -> Iterable[tuple[int, str]]:
    return enumerate(combo)


def coverage_of(d: Draw, drawn_by: str, *, read: int, selected: int) -> str:
    """What the sample covers, in one sentence for the task's status."""
    n = len(d.ids)
    read_note = "" if read >= selected else f" (kinds learnt from {read:,} of {selected:,})"
    if drawn_by == "random":
        return f"{n:,} dead letters drawn at random: no error text to tell kinds apart{read_note}"
    whose = "pattern's value combinations" if drawn_by == "pattern" else "selection's error kinds"
    share = math.floor(100 * d.combinations_covered / d.combinations) if d.combinations else 100
    return (
        f"{n:,} dead letters drawn across {d.kinds_covered} of {d.kinds} kinds: covers"
        f" {share}% of the {whose} ({d.combinations_covered} of {d.combinations}){read_note}"
    )


# Transitions


def sampled(c: Canary, moved_ids: Sequence[str], last_seq: int | None, now: float) -> Canary:
    """The canary once a step of its sample moved `moved_ids` (`last_seq`: the last of the
    sample the step read; None when no more of it is left): the watch starts when the whole
    sample has moved; a sample none of which could move decides nothing and lets the rest go."""
    kept = MAX_CANARY_IDS_RECORDED - len(c.sample_ids)
    c = replace(
        c,
        sample=c.sample + len(moved_ids),
        sample_ids=c.sample_ids + tuple(moved_ids[: max(kept, 0)]),
        plan_seq=c.plan_seq if last_seq is None else last_seq,
    )
    if last_seq is not None and c.sample < c.size:
        return c
    if c.sample == 0:
        return replace(c, decision=CanaryDecision.CONTINUED, decided_at=now)
    return replace(c, watch_until=now + c.watch)


def watched(c: Canary, redeaths: int, seen_seq: int, now: float) -> Canary:
    """The canary once `redeaths` of its sample are known to have died again: paused as
    soon as more than `max_redeath` percent did, passed once the watch is over."""
    c = replace(c, redeaths=redeaths, seen_seq=seen_seq)
    if redeaths * 100 > c.max_redeath * c.sample:
        reason = f"{redeaths} of {c.sample} canaries died again" + (
            f": pattern {c.pattern_id} still failing" if c.pattern_id else ""
        )
        return replace(c, decision=CanaryDecision.PAUSED, decided_at=now, reason=reason)
    if now >= (c.watch_until or now):
        return replace(c, decision=CanaryDecision.CONTINUED, decided_at=now)
    return c


def drawn(c: Canary | None) -> frozenset[str]:
    """The dead letters the sample's steps examined, which the rest's steps leave out."""
    return frozenset(c.plan) if c is not None else frozenset()


def sample_filter(c: Canary, where: DeadLetterFilter) -> DeadLetterFilter:
    """What the sample's steps select: the drawn ids (a canary drawn before the draw existed
    has none: it takes the selection's first dead letters)."""
    return replace(where, message_ids=c.plan) if c.plan else where
