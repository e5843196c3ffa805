"""The `deadletter` Spark data source: read a DLQ through the native HTTP API, write messages.

Python Data Source API (Spark 4), no JVM jars. Reading splits the dead-lettered time range
into partitions that each page through `GET /v2/queues/{dlq}/dead_letters` with their own
`since`/`until` slice; equality on source_queue/reason and bounds on dead_lettered_at are
pushed down to the server. Writing posts rows as messages, 20 per request. Streaming reads
the DLQ in its own numbering: a micro-batch's offset is the `marker` of the last dead letter
it took, which Spark checkpoints, so a restarted query goes on after it. The option `filter`
(the filter language as one query string) narrows what is read, on the server. The streaming sink
writes pattern assignments back to the DLQ's stored patterns (`assignments.py`), each
micro-batch once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    InputPartition,
    LessThan,
    LessThanOrEqual,
    SimpleDataSourceStreamReader,
    WriterCommitMessage,
)

from deadletter.domain.filters import blank
from deadletter.pipeline import assignments
from deadletter.pipeline.columns import SCHEMA_DDL, iso, parse_time
from deadletter.pipeline.messages import client_of, filter_option, row_of

MAX_PAGE = 1000
# The most dead letters one micro-batch takes unless the option `max_per_batch` says otherwise.
MAX_PER_BATCH = 10_000
POST_BATCH = 20  # Zaqar's default _max_messages_post_size count limit
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Query:
    """What one reader asks the server for; `since` inclusive, `until` exclusive."""

    source_queue: str | None = None
    reason: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    pushed: list[str] = field(default_factory=list)
    # The option `source_tag`: the dead letters of one consumer tag of their source queue.
    source_tag: str | None = None
    # The rest of the option `filter` (the filter language), sent on as it is.
    where: dict[str, list[str]] = field(default_factory=dict)

    def narrow_since(self, value: datetime) -> None:
        self.since = value if self.since is None else max(self.since, value)

    def narrow_until(self, value: datetime) -> None:
        self.until = value if self.until is None else min(self.until, value)

    def filters(self) -> dict[str, Any]:
        """The query as the browse's parameters."""
        return {
            "source_queue": self.source_queue,
            "source_tag": self.source_tag,
            "reason": self.reason,
            "since": iso(self.since),
            # The wire has milliseconds: round the bound up, the reader trims exactly.
            "until": iso(self.until + timedelta(milliseconds=1)) if self.until else None,
            **self.where,
        }

    @classmethod
    def of_options(cls, options: dict[str, str]) -> Query:
        """The reader's options as a query: `source_queue`, `reason`, `source_tag`, `since`
        and `until`, and the option `filter`, whose names of those join them (a name given
        both ways must agree; its times narrow the range) and whose others go on as given."""
        where = filter_option(options)
        for name in ("source_queue", "reason", "source_tag", "since", "until"):
            if name in options and blank(options[name]):
                raise ValueError(
                    f"the deadletter data source's option {name} is empty; leave it out"
                )
        query = cls(since=parse_time(options.get("since")), until=parse_time(options.get("until")))
        for name in ("source_queue", "reason", "source_tag"):
            values = {v for v in (options.get(name), *where.pop(name, ())) if v}
            if len(values) > 1:
                raise ValueError(f"{name} is given twice, as {' and '.join(sorted(values))}")
            setattr(query, name, values.pop() if values else None)
        for name, narrow in (("since", query.narrow_since), ("until", query.narrow_until)):
            for value in where.pop(name, ()):
                at = parse_time(value) if value.strip() else None
                if at is None:
                    raise ValueError(f"the filter's {name} is empty")
                narrow(at)
        query.where = where
        return query


@dataclass
class Slice(InputPartition):
    """One partition: a half-open slice [since, until) of the dead-lettered time range."""

    index: int
    since: datetime | None
    until: datetime | None


class DeadLetterReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.query = Query.of_options(options)

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Keep what the server can filter; hand everything else back to Spark."""
        for f in filters:
            attribute: tuple[str, ...] = getattr(f, "attribute", ())
            column = attribute[0] if len(attribute) == 1 else None
            value: Any = getattr(f, "value", None)
            # An equality on "" stays with Spark: the server refuses a blank filter.
            if isinstance(f, EqualTo) and column in ("source_queue", "reason") and value != "":
                current = getattr(self.query, column)
                if current is not None and current != value:
                    yield f  # contradicts the option: let Spark produce the empty answer
                    continue
                setattr(self.query, column, value)
            elif column == "dead_lettered_at" and isinstance(value, datetime):
                at = parse_time(value)
                assert at is not None
                if isinstance(f, GreaterThanOrEqual):
                    self.query.narrow_since(at)
                elif isinstance(f, GreaterThan):
                    self.query.narrow_since(at + timedelta(microseconds=1))
                elif isinstance(f, LessThan):
                    self.query.narrow_until(at)
                elif isinstance(f, LessThanOrEqual):
                    self.query.narrow_until(at + timedelta(microseconds=1))
                else:
                    yield f
                    continue
            else:
                yield f
                continue
            self.query.pushed.append(f"{type(f).__name__}({column}, {value!r})")

    def partitions(self) -> list[Slice]:
        """Split [first dead letter, until or now] into `partitions` equal time slices."""
        wanted = max(1, int(self.options.get("partitions", "4")))
        with client_of(self.options) as client:
            pages = client.dead_letter_pages(self.options["queue"], 1, **self.query.filters())
            first_page = next(pages, [])
        if not first_page or wanted == 1:
            return [Slice(0, self.query.since, self.query.until)]
        start = parse_time((first_page[0].get("provenance") or {}).get("dead_lettered_at"))
        # The last slice is open-ended, so `end` only balances the slices: a server clock
        # ahead of ours must not collapse them into one.
        end = self.query.until or max(datetime.now(UTC), (start or EPOCH) + timedelta(hours=1))
        if start is None or start >= end:
            return [Slice(0, self.query.since, self.query.until)]
        step = (end - start) / wanted
        bounds = [start + step * i for i in range(wanted + 1)]
        # The outer slices stay open so nothing falls outside them, even a dead letter whose
        # time precedes the first one listed.
        slices = []
        for i in range(wanted):
            since = self.query.since if i == 0 else bounds[i]
            until = self.query.until if i == wanted - 1 else bounds[i + 1]
            slices.append(Slice(i, since, until))
        return slices

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's dead letters, an Arrow batch a page (exports.rows_batch): Spark
        takes them as they are, where rows would be converted value by value."""
        from deadletter.pipeline.exports import rows_batch

        page: list[tuple[Any, ...]] = []
        for row in self._rows(partition):
            page.append(row)
            if len(page) == MAX_PAGE:
                yield rows_batch(page)
                page = []
        if page:
            yield rows_batch(page)

    def _rows(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, Slice)
        query = Query(
            self.query.source_queue,
            self.query.reason,
            partition.since,
            partition.until,
            source_tag=self.query.source_tag,
            where=self.query.where,
        )
        page_size = min(MAX_PAGE, max(1, int(self.options.get("page_size", str(MAX_PAGE)))))
        with client_of(self.options) as client:
            dlq = self.options["queue"]
            for message in client.dead_letters(dlq, page_size, **query.filters()):
                row = row_of(message)
                at = row[5]
                # Exact half-open bounds on the client side, whatever the server's
                # inclusivity, so adjacent slices never share or drop a row.
                if at is None:
                    if partition.index != 0:
                        continue  # undated: the first slice alone keeps it
                elif (query.since is not None and at < query.since) or (
                    query.until is not None and at >= query.until
                ):
                    continue
                yield row


@dataclass
class Posted(WriterCommitMessage):
    count: int


class DeadLetterWriter(DataSourceWriter):
    def __init__(self, options: dict[str, str], columns: list[str]) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[Any]) -> Posted:
        queue = self.options["queue"]
        ttl = self.options.get("ttl")
        batch: list[dict[str, Any]] = []
        sent = 0
        with client_of(self.options) as client:

            def flush() -> None:
                nonlocal sent
                if batch:
                    client.send_messages(queue, batch)
                    sent += len(batch)
                    batch.clear()

            for row in iterator:
                batch.append(self.message_of(row.asDict(), ttl))
                if len(batch) >= POST_BATCH:
                    flush()
            flush()
        return Posted(sent)

    @staticmethod
    def message_of(row: dict[str, Any], ttl: str | None) -> dict[str, Any]:
        text = row.get("body")
        try:
            body: Any = json.loads(text) if isinstance(text, str) else text
        except ValueError:
            body = text
        message: dict[str, Any] = {"body": body}
        if ttl:
            message["ttl"] = int(ttl)
        attributes = row.get("attributes") or {}
        if attributes:
            message["attributes"] = {
                k: {"type": "String", "value": str(v)} for k, v in attributes.items()
            }
        return message


@dataclass
class Assigned(WriterCommitMessage):
    """One partition's assignments, carried to the driver, which merges the batch at once."""

    rows: list[assignments.Assignment]


class PatternSink(DataSourceStreamWriter):
    """`df.writeStream.format("deadletter")`: pattern assignments (columns `message_id`,
    `pattern_id`; optionally `template`, `signature`, `dead_lettered_at`) merged into the
    stored patterns of the DLQ named by `queue`, each micro-batch once, in one request the
    server applies in one transaction (the writer id: `assignments.writer_id`). The executors
    only collect; the driver's commit writes, so a batch whose tasks failed writes nothing."""

    def __init__(self, options: dict[str, str], columns: list[str]) -> None:
        assignments.check_columns(columns)
        self.options = options
        self.sink = assignments.writer_id(options)

    def write(self, iterator: Iterator[Any]) -> Assigned:
        rows = (assignments.of_row(row.asDict()) for row in iterator)
        return Assigned([a for a in rows if a is not None])

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        rows = [a for m in messages if isinstance(m, Assigned) for a in m.rows]
        if not rows:
            return
        if len(rows) > assignments.MAX_ASSIGNMENTS:
            raise ValueError(
                f"micro-batch {batchId} assigns {len(rows)} dead letters; the deadletter sink "
                f"merges at most {assignments.MAX_ASSIGNMENTS} per batch (lower the source's "
                "max_per_batch)"
            )
        with client_of(self.options) as client:
            client.merge_assignments(
                self.options["queue"], self.sink, batchId, assignments.as_json(rows)
            )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing was written: the executors only collected."""


class DeadLetterStreamReader(SimpleDataSourceStreamReader):
    """`spark.readStream.format("deadletter")`: the dead letters that reach a DLQ, each once.

    The offset is `{"marker": n}`: every dead letter numbered above n is still to come. The
    DLQ numbers what it receives in commit order (a move that commits late is never numbered
    below one already listed), and a dead letter that comes back after a redrive is numbered
    anew, so it counts again, as a new death. Dead letters redriven or removed before a batch
    reads them are not seen. Options as for reading, but for `since`/`until` and the pushdown:
    `source_queue`, `source_tag`, `reason`; `starting_marker` (default 0, the whole DLQ) and
    `max_per_batch`."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        query = Query.of_options({k: v for k, v in options.items() if k not in ("since", "until")})
        self.filters: dict[str, Any] = {
            k: v for k, v in query.filters().items() if k not in ("since", "until")
        }
        # A stream reads what comes: the filter's own times are sent on, not its slices.
        self.filters.update(
            {k: v for k, v in filter_option(options).items() if k in ("since", "until")}
        )
        self.max_per_batch = max(1, int(options.get("max_per_batch", str(MAX_PER_BATCH))))
        self.page_size = min(MAX_PAGE, max(1, int(options.get("page_size", str(MAX_PAGE)))))

    def initialOffset(self) -> dict[str, int]:
        return {"marker": int(self.options.get("starting_marker", "0"))}

    def read(self, start: dict[str, int]) -> tuple[Iterator[tuple[Any, ...]], dict[str, int]]:
        """The dead letters after `start` (at most `max_per_batch`), and the offset after them."""
        rows, end = self._between(start["marker"], None, self.max_per_batch)
        return iter(rows), {"marker": end}

    def readBetweenOffsets(
        self, start: dict[str, int], end: dict[str, int]
    ) -> Iterator[tuple[Any, ...]]:
        """A batch again, after a restart: the same range of the numbering."""
        rows, _ = self._between(start["marker"], end["marker"], None)
        return iter(rows)

    def _between(
        self, after: int, upto: int | None, most: int | None
    ) -> tuple[list[tuple[Any, ...]], int]:
        rows: list[tuple[Any, ...]] = []
        last = after
        page_size = self.page_size if most is None else min(self.page_size, most)
        with client_of(self.options) as client:
            pages = client.dead_letter_pages(
                self.options["queue"], page_size, marker=str(after), **self.filters
            )
            for page in pages:
                for message in page:
                    marker = int(message["marker"])
                    if upto is not None and marker > upto:
                        return rows, last
                    rows.append(row_of(message))
                    last = marker
                    if most is not None and len(rows) >= most:
                        return rows, last
        return rows, last


class DeadLetterDataSource(DataSource):
    """`spark.read.format("deadletter")` / `spark.readStream.format("deadletter")` /
    `df.write.format("deadletter")` / `df.writeStream.format("deadletter")`."""

    @classmethod
    def name(cls) -> str:
        return "deadletter"

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: Any) -> DeadLetterReader:
        self._check("url", "queue")
        return DeadLetterReader(dict(self.options))

    def simpleStreamReader(self, schema: Any) -> DeadLetterStreamReader:
        self._check("url", "queue")
        return DeadLetterStreamReader(dict(self.options))

    def writer(self, schema: Any, overwrite: bool) -> DeadLetterWriter:
        self._check("url", "queue")
        return DeadLetterWriter(dict(self.options), [f.name for f in schema.fields])

    def streamWriter(self, schema: Any, overwrite: bool) -> PatternSink:
        self._check("url", "queue")
        return PatternSink(dict(self.options), [f.name for f in schema.fields])

    def _check(self, *names: str) -> None:
        missing = [n for n in names if not self.options.get(n)]
        if missing:
            raise ValueError(f"the deadletter data source needs option(s) {missing}")
