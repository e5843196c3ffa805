"""`deadletter analyze --follow`: a DLQ's stored patterns kept current as dead letters arrive.

The dead letters come from the streaming source (`datasource.DeadLetterStreamReader`, in this
process, or `spark.readStream.format("deadletter")` with `--engine spark`), batch after batch;
after each batch that took dead letters, the batch analysis (`local.analyze_rows`) runs again
over every dead letter taken so far, so the patterns are those `analyze` finds on the same
dead letters, and each is stored with its rate. A pattern's id is a hash of its template and
error signature (`mining.pattern_id`), so it keeps its id as members arrive; a new failure
makes a new pattern, which the server alerts on (`engine/patterns.py`).

The state (the dead letters taken and the stream's offset after them) is one JSON file in the
checkpoint folder, replaced whole after each batch, so a restart goes on where it stopped.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from deadletter.pipeline.analysis import Result
from deadletter.pipeline.columns import COLUMNS, iso, parse_time
from deadletter.pipeline.local import analyze_rows
from deadletter.pipeline.mining import DEFAULT_THRESHOLD

# The rate of a pattern: its dead letters in the RATE_WINDOW before the batch, per minute.
RATE_WINDOW = timedelta(minutes=5)
STATE = "follow.json"
# A follow keeps every dead letter it has taken as rows and analyses them again after each
# batch: about 3 KB a dead letter, so at most this many.
FOLLOW_MAX_ROWS = 80_000
# The per-minute counts stored with each pattern, for the console's trend.
TREND_MINUTES = 60
_TIMES = ("dead_lettered_at", "enqueued_at")

Post = Callable[[list[dict[str, Any]]], None]


class TooLarge(RuntimeError):
    """The followed DLQ passed the dead letters one process re-analyses per batch."""


def rate_per_minute(times: Iterable[datetime | None], now: datetime) -> float:
    """Dead letters per minute over the RATE_WINDOW up to `now` (naive UTC times)."""
    since = now - RATE_WINDOW
    recent = sum(1 for at in times if at is not None and since < at <= now)
    return round(recent / (RATE_WINDOW.total_seconds() / 60), 3)


def minute_counts(times: Iterable[datetime | None]) -> list[list[Any]]:
    """Dead letters per minute, the last TREND_MINUTES minutes that have any: the buckets of
    the console's trend (`[[minute, count], ...]`, as `hourly_counts` are per hour)."""
    counts: dict[datetime, int] = {}
    for at in times:
        if at is not None:
            minute = at.replace(second=0, microsecond=0)
            counts[minute] = counts.get(minute, 0) + 1
    return [[iso(m), counts[m]] for m in sorted(counts)[-TREND_MINUTES:]]


def row_dict(values: Iterable[Any]) -> dict[str, Any]:
    """A row in SCHEMA's column order -> a dict, times naive UTC as Spark hands them back."""
    row = dict(zip(COLUMNS, values, strict=True))
    for name in _TIMES:
        at = row[name]
        if isinstance(at, datetime) and at.tzinfo is not None:
            row[name] = at.astimezone(UTC).replace(tzinfo=None)
    return row


class Follower:
    """The dead letters taken so far, the stream's position after them, and what one more
    batch does to the stored patterns."""

    def __init__(
        self,
        out_dir: Path,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        post: Post | None = None,
        checkpoint: Path | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC).replace(tzinfo=None),
        max_rows: int = FOLLOW_MAX_ROWS,
    ) -> None:
        self.out_dir = out_dir
        self.threshold = threshold
        self.post = post
        self.checkpoint = checkpoint
        self.now = now
        self.max_rows = max_rows
        self.rows: list[dict[str, Any]] = []
        self.seen: set[str] = set()
        self.marker: int | None = None  # the in-process stream's offset
        self.batch: int | None = None  # the last Spark micro-batch absorbed
        self.result: Result | None = None
        if checkpoint is not None and (checkpoint / STATE).exists():
            self._load(checkpoint / STATE)

    def absorb(
        self,
        rows: Iterable[dict[str, Any]],
        marker: int | None = None,
        batch: int | None = None,
    ) -> Result | None:
        """Take a batch: the new dead letters (one taken before is not counted again), and
        the offset after them; the analysis of everything taken when there was anything new."""
        new = [r for r in rows if r["message_id"] not in self.seen]
        if len(self.rows) + len(new) > self.max_rows:
            raise TooLarge(
                f"more than {self.max_rows:,} dead letters followed: one process re-analyses"
                " them all after each batch; analyse this DLQ in batch with `analyze --queue`"
            )
        for row in new:
            self.seen.add(row["message_id"])
            self.rows.append(row)
        self.marker = marker if marker is not None else self.marker
        self.batch = batch if batch is not None else self.batch
        if new:
            post = self.post
            at = self.now()
            times = {r["message_id"]: r["dead_lettered_at"] for r in self.rows}

            def with_rates(patterns: list[dict[str, Any]]) -> None:
                for p in patterns:
                    member_times = [times.get(m) for m in p["message_ids"]]
                    p["rate_per_minute"] = rate_per_minute(member_times, at)
                    p["minute_counts"] = minute_counts(member_times)
                if post is not None:
                    post(patterns)

            self.result = analyze_rows(
                self.rows, self.out_dir, threshold=self.threshold, post=with_rates
            )
        self._save()
        return self.result if new else None

    def _save(self) -> None:
        if self.checkpoint is None:
            return
        self.checkpoint.mkdir(parents=True, exist_ok=True)
        rows = [{k: iso(v) if k in _TIMES else v for k, v in r.items()} for r in self.rows]
        doc = {"marker": self.marker, "batch": self.batch, "rows": rows}
        path = self.checkpoint / STATE
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(partial, path)  # whole or not at all: a stop mid-write keeps the last one

    def _load(self, path: Path) -> None:
        doc = json.loads(path.read_text(encoding="utf-8"))
        self.marker, self.batch = doc.get("marker"), doc.get("batch")
        for raw in doc.get("rows", []):
            row = dict(raw)
            for name in _TIMES:
                at = parse_time(row[name])
                row[name] = None if at is None else at.astimezone(UTC).replace(tzinfo=None)
            self.rows.append(row)
            self.seen.add(row["message_id"])


def progress(taken: int, result: Result) -> str:
    return f"{taken:,} new dead letters; {result.total:,} in {len(result.patterns)} patterns"


def follow_local(
    options: dict[str, str],
    follower: Follower,
    stop: threading.Event,
    interval: float,
    say: Callable[[str], None] = lambda _stage: None,
) -> None:
    """Read the stream in this process until `stop` is set: a batch, then a wait of
    `interval` seconds whenever the DLQ had nothing more."""
    from deadletter.pipeline.datasource import DeadLetterStreamReader

    reader = DeadLetterStreamReader(options)
    offset = reader.initialOffset() if follower.marker is None else {"marker": follower.marker}
    while not stop.is_set():
        taken, end = reader.read(offset)
        rows = list(taken)
        result = follower.absorb((row_dict(r) for r in rows), marker=end["marker"])
        if result is not None:
            say(progress(len(rows), result))
        offset = end
        if len(rows) < reader.max_per_batch:
            stop.wait(interval)


def follow_spark(
    spark: Any,
    *,
    options: dict[str, str],
    follower: Follower,
    stop: threading.Event,
    interval: float,
    checkpoint: Path,
    say: Callable[[str], None] = lambda _stage: None,
) -> None:
    """The same through a Spark streaming query: each micro-batch is collected and absorbed
    (a micro-batch Spark runs again after a restart is recognised by its id and skipped)."""
    reader = spark.readStream.format("deadletter")
    for key, value in options.items():
        reader = reader.option(key, value)

    def each(frame: Any, batch_id: int) -> None:
        if follower.batch is not None and batch_id <= follower.batch:
            return
        rows = [row_dict(r[c] for c in COLUMNS) for r in frame.collect()]
        result = follower.absorb(rows, batch=batch_id)
        if result is not None:
            say(progress(len(rows), result))

    query = (
        reader.load()
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(checkpoint / "spark"))
        .trigger(processingTime=f"{interval} seconds")
        .start()
    )
    try:
        while not stop.is_set() and query.isActive:
            stop.wait(0.5)
    finally:
        query.stop()
    error = query.exception()
    if error is not None:
        raise RuntimeError(f"the streaming query failed: {error}")
