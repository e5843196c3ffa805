"""What a dead-letter filter selects, for every operation that takes one: browse, count,
export, purge, redrive (and the preview of each, a count).

The store reads the filter's columns (source queue, consumer tag, reason, the time of death,
ids); the engine turns ages into times and a pattern into its ids first, so those are read by
the store too, and evaluates the rest (error class and text, attributes, body, deaths) on
each dead letter the store returns, a page at a time.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import jmespath

from deadletter.domain import errors
from deadletter.domain.auto_redrive import auto_rounds
from deadletter.domain.filters import REGEX_TIMEOUT, compiled_body, compiled_regex, narrowed
from deadletter.domain.model import DeadLetterFilter, ListQuery, Message
from deadletter.engine import patterns
from deadletter.storage.base import Transaction

# Dead letters read per statement when the engine evaluates part of the filter.
SCAN = 500


def expand(tx: Transaction, project: str, dlq: str, where: DeadLetterFilter) -> DeadLetterFilter:
    """`where` with the filter it names saved on the DLQ read in (both must hold), naming it
    no more. A name the DLQ has not saved is FilterNotFound."""
    if where.saved is None:
        return where
    found = tx.get_filter(project, dlq, where.saved)
    if found is None:
        raise errors.FilterNotFound(f"no filter {where.saved!r} is saved on {dlq!r}")
    return narrowed(found.filter, where, where.saved)


def resolve(
    tx: Transaction, project: str, dlq: str, *, where: DeadLetterFilter, now: float
) -> DeadLetterFilter:
    """`where` as the store can read it: the saved filter it names read in (`expand`), its
    ages as times of death (older than N s: died before now - N) and its pattern as the ids
    of the pattern's dead letters (beside any ids it lists, both must hold). A pattern the
    DLQ does not store is PatternNotFound."""
    where = expand(tx, project, dlq, where)
    since, until, ids = where.since, where.until, where.message_ids
    if where.older_than is not None:
        bound = now - where.older_than
        until = bound if until is None else min(until, bound)
    if where.newer_than is not None:
        bound = now - where.newer_than
        since = bound if since is None else max(since, bound)
    if where.pattern_id is not None:
        members = patterns.message_ids(patterns.stored(tx, project, dlq), where.pattern_id)
        kept = set(members)
        ids = members if ids is None else tuple(i for i in ids if i in kept)
    return replace(
        where, since=since, until=until, message_ids=ids, older_than=None, newer_than=None,
        pattern_id=None,
    )  # fmt: skip


def matches(m: Message, where: DeadLetterFilter) -> bool:
    """Whether the dead letter `m` passes the part of `where` the engine evaluates."""
    if where.error_class is not None and not _class_matches(m, where.error_class):
        return False
    if not _error_text_matches(m, where):
        return False
    for name, value in where.attributes:
        found = m.attributes.get(name)
        if found is None or (value is not None and found.value != value):
            return False
    if not _deaths_match(m, where):
        return False
    if where.redriven_by is not None and not any(
        e.get("event") == "redriven" and e.get("task_id") == where.redriven_by for e in m.history
    ):
        return False
    cap = where.auto_rounds_below  # a round of automatic redrive leaves out the exhausted
    if cap is not None and auto_rounds(m.history) >= cap:
        return False
    return where.body is None or _body_selects(where.body, m.body)


def holds(m: Message, where: DeadLetterFilter) -> bool:
    """Whether the dead letter `m` passes the whole of `where` (resolved), the store's part
    too: for dead letters no store statement reads (an archive's)."""
    p = m.provenance
    if p is None:
        return False
    if where.message_ids is not None and m.id not in where.message_ids:
        return False
    stored = (
        (where.source_queue, p.source_queue),
        (where.source_tag, p.source_tag),
        (where.reason, p.reason),
    )
    if any(wanted is not None and wanted != found for wanted, found in stored):
        return False
    if where.since is not None and p.dead_lettered_at < where.since:
        return False
    if where.until is not None and p.dead_lettered_at >= where.until:
        return False
    return matches(m, where)


def _error_text_matches(m: Message, where: DeadLetterFilter) -> bool:
    if where.error_contains is None and where.error_matches is None:
        return True
    text = error_text(m)
    if where.error_contains is not None and where.error_contains not in text:
        return False
    return where.error_matches is None or _searches(where.error_matches, text)


def _deaths_match(m: Message, where: DeadLetterFilter) -> bool:
    if where.min_deaths is None and where.max_deaths is None:
        return True
    deaths = sum(1 for e in m.history if e.get("event") == "dead_lettered")
    if m.provenance is not None and not deaths:
        deaths = 1  # dead before deaths were recorded in the history
    if where.min_deaths is not None and deaths < where.min_deaths:
        return False
    return where.max_deaths is None or deaths <= where.max_deaths


def error_text(m: Message) -> str:
    """What a dead letter says of its error, as one text: the consumer's description, the
    error, its class and its stack."""
    p = m.provenance
    if p is None:
        return ""
    parts = (p.description, p.error, p.error_class, p.error_stack)
    return "\n".join(t for t in parts if t)


def error_class(m: Message) -> str | None:
    """The error's class: as the consumer gave it, else the name a text error's last line
    starts with (`KeyError: 'id'`, a traceback's last line)."""
    p = m.provenance
    if p is None:
        return None
    if p.error_class:
        return p.error_class
    lines = [line.strip() for line in (p.error or "").splitlines() if line.strip()]
    if not lines:
        return None
    head = lines[-1].split(":", 1)[0].strip()
    return head if head and all(part.isidentifier() for part in head.split(".")) else None


def _class_matches(m: Message, wanted: str) -> bool:
    """The class named whole, or by its last dotted part (`KeyError` names
    `builtins.KeyError`)."""
    found = error_class(m)
    return found is not None and (found == wanted or found.endswith("." + wanted))


def _searches(pattern: str, text: str) -> bool:
    """Whether `pattern` is found in `text`, the match stopped at its timeout: a pattern
    that backtracks without end is refused on the first dead letter it meets."""
    try:
        return compiled_regex(pattern).search(text, timeout=REGEX_TIMEOUT) is not None
    except TimeoutError:
        raise errors.InvalidFilter(
            f"error_matches took more than {REGEX_TIMEOUT * 1000:.0f} ms on one dead letter's"
            " error: simplify the expression (nested repetitions backtrack)"
        ) from None


def decode_body(raw: bytes) -> Any:
    """The body as JSON when it is JSON (Zaqar's messages), else its text (SQS's)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw.decode("utf-8", errors="replace")


def _body_selects(expression: str, raw: bytes) -> bool:
    try:
        result = compiled_body(expression).search(decode_body(raw))
    except jmespath.exceptions.JMESPathError:
        return False  # a function given the wrong type by this body: it does not match
    # JMESPath's truth: null, false, an empty string, list or object are false.
    return result not in (None, False, "", [], {})


def listed(
    tx: Transaction,
    project: str,
    dlq: str,
    *,
    now: float,
    where: DeadLetterFilter,
    after_seq: int,
    limit: int,
    max_seq: int | None = None,
) -> list[Message]:
    """Up to `limit` dead letters `where` selects after `after_seq`, oldest first, claimed
    and delayed ones included; `where` resolved (`resolve`)."""
    stored = where.for_store()
    found: list[Message] = []
    while True:
        take = SCAN if where.in_engine else limit
        query = ListQuery(after_seq=after_seq, limit=take, include_claimed=True,
                          include_delayed=True, dead_letters=stored, max_seq=max_seq)  # fmt: skip
        page = tx.list_messages(project, dlq, now, query)
        if not where.in_engine:
            return page
        found.extend(m for m in page if matches(m, where))
        if len(found) >= limit or len(page) < take:
            return found[:limit]
        after_seq = page[-1].seq


def count(
    tx: Transaction, project: str, dlq: str, *, now: float, where: DeadLetterFilter, max_seq: int
) -> int:
    """How many dead letters up to `max_seq` `where` selects (resolved)."""
    if not where.in_engine:
        return tx.count_dead_letters(
            project, dlq, now=now, where=where.for_store(), max_seq=max_seq
        )
    stored, total, after = where.for_store(), 0, 0
    while True:
        query = ListQuery(after_seq=after, limit=SCAN, include_claimed=True,
                          include_delayed=True, dead_letters=stored, max_seq=max_seq)  # fmt: skip
        page = tx.list_messages(project, dlq, now, query)
        total += sum(1 for m in page if matches(m, where))
        if len(page) < SCAN:
            return total
        after = page[-1].seq


def redrive_batch(
    tx: Transaction,
    project: str,
    dlq: str,
    *,
    now: float,
    where: DeadLetterFilter,
    max_seq: int,
    limit: int,
    after_seq: int,
) -> tuple[list[tuple[str, int, str | None, str | None]], int, bool]:
    """Up to `limit` visible dead letters `where` selects after `after_seq`, locked for a
    redrive's step: (id, seq, source queue, consumer tag) each; the seq the next step goes on
    after (past what was read and not selected); and whether nothing is left after it."""
    stored = where.for_store()
    if not where.in_engine:
        batch = tx.dead_letter_sources(
            project, dlq, now=now, where=stored, max_seq=max_seq, limit=limit, after_seq=after_seq
        )
        return batch, batch[-1][1] if batch else after_seq, len(batch) < limit
    take = max(limit, SCAN)
    page = tx.dead_letters(
        project,
        dlq,
        now=now,
        where=stored,
        max_seq=max_seq,
        limit=take,
        lock=True,
        after_seq=after_seq,
    )
    picked: list[tuple[str, int, str | None, str | None]] = []
    cursor, read = after_seq, 0
    for m in page:
        if len(picked) == limit:
            break
        cursor, read = m.seq, read + 1
        if matches(m, where):
            p = m.provenance
            source, tag = (p.source_queue, p.source_tag) if p is not None else (None, None)
            picked.append((m.id, m.seq, source, tag))
    return picked, cursor, read == len(page) and len(page) < take
