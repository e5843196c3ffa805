"""The in-process engine's counts over an export read block by block (reader.py): what the
summary needs of every dead letter, kept per distinct masked text and per group, never per
dead letter, save each one's message id, masked text's number and line (for the assignments
and the examples).

A block is counted on its own (`count_block`: its distinct texts found by Arrow's dictionary
encoding over the texts with their digits as classes and masked once, its groups counted by
Arrow's hash aggregation), in a worker process where the machine has cores to spare; `Tally`
merges the counted blocks in input order, numbering each masked text where the input first
shows it, so that the result is the same however many workers counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deadletter.pipeline.masking import Masked, Masker
from deadletter.pipeline.reader import Block

_GROUP_BY = ["m", "q", "r", "hour", "s"]
# A helper process pays only for a file of more blocks than this: forked from a process whose
# caches are full, it costs each of them copies of what they write, and its blocks and counts
# travel between them (docs/pipeline.md, run 17: no faster at 80,000 dead letters, 8 blocks,
# with a core idle; a little at 250,000, 24 blocks; 17 % at a million).
HELPED_PAST_BLOCKS = 16
_MASKER: Masker | None = None  # this process's, kept between blocks for its caches


@dataclass
class Counted:
    """One block, counted: numbers are the block's own (into `masked`, `shape_keys`)."""

    message_ids: pa.Array
    lines: pa.Array
    masked: list[Masked]  # distinct, in the order the block first shows them
    numbers: pa.Array  # each dead letter's place in `masked`
    shape_keys: list[tuple[str, str | None]]
    groups: pa.Table  # m, q, r, hour, s, t_min, t_max, m_count
    attributes: pa.Table | None  # m, name, value, count_all


def count_block(block: Block) -> Counted:
    """What the summary needs of one block."""
    global _MASKER
    if _MASKER is None:
        _MASKER = Masker()
    masked, numbers = _masked(block, _MASKER)
    attributes = None
    rows, names, values = block.attributes
    if rows:
        table = pa.table(
            {
                "m": pc.take(numbers, pa.array(rows, pa.int32())),
                "name": pa.array(names, pa.string()),
                "value": pa.array(values, pa.string()),
            }
        )
        attributes = table.group_by(["m", "name", "value"], use_threads=False).aggregate(
            [([], "count_all")]
        )
    at = block.dead_lettered_at
    table = pa.table(
        {
            "m": numbers,
            "q": pa.array(block.source_queues, pa.string()),
            "r": pa.array(block.reasons, pa.string()),
            "hour": pc.floor_temporal(at, unit="hour") if len(at) else at,
            "s": block.shapes,
            "t": at,
        }
    )
    groups = table.group_by(_GROUP_BY, use_threads=False).aggregate(
        [("t", "min"), ("t", "max"), ("m", "count")]
    )
    return Counted(
        message_ids=pa.array(block.message_ids, pa.string()),
        lines=pa.array(block.line_numbers, pa.int64()),
        masked=masked,
        numbers=numbers,
        shape_keys=block.shape_keys,
        groups=groups,
        attributes=attributes,
    )


def _masked(block: Block, masker: Masker) -> tuple[list[Masked], pa.Array]:
    """The block's distinct masked texts and each dead letter's place among them: each
    distinct (error, description, class) with its digits as classes masked once, and the
    texts themselves where their digits' values count."""
    encoded = [c.dictionary_encode() for c in block.digit_classes]
    texts = [e.dictionary.to_pylist() for e in encoded]
    code: Any = None
    for e, distinct in zip(encoded, texts, strict=True):
        # A missing text is one more value, after the distinct ones.
        index = pc.fill_null(e.indices.cast(pa.int64()), len(distinct))
        code = index if code is None else pc.add(pc.multiply(code, len(distinct) + 1), index)
    if code is None or not len(code):
        return [], pa.array([], pa.int32())
    combos = code.dictionary_encode()
    errors, descriptions, classes = ([*t, None] for t in texts)
    n_descriptions, n_classes = len(descriptions), len(classes)
    found: list[Masked | None] = []
    for value in combos.dictionary.to_pylist():
        rest, c = divmod(value, n_classes)
        e, d = divmod(rest, n_descriptions)
        found.append(masker.of_digit_class((errors[e], descriptions[d], classes[c])))
    numbers: list[int]
    place: dict[Masked, int] = {}
    if None not in found:
        # In the order the block first shows each (Arrow's dictionary order).
        numbers = [place.setdefault(m, len(place)) for m in found]  # type: ignore[arg-type]
        return list(place), pc.take(pa.array(numbers, pa.int32()), combos.indices)
    # Some texts are masked as they are: row by row, so that the order stays the input's.
    numbers = []
    for row, combo in enumerate(combos.indices.to_pylist()):
        masked = found[combo]
        if masked is None:
            key = (block.errors[row], block.descriptions[row], block.error_classes[row])
            masked = masker.of_text(key)
        numbers.append(place.setdefault(masked, len(place)))
    return list(place), pa.array(numbers, pa.int32())


class Tally:
    """The counted blocks merged, in input order."""

    def __init__(self) -> None:
        self.masked: list[Masked] = []  # by number
        self._number_of: dict[Masked, int] = {}
        self.counts: Counter[int] = Counter()  # dead letters by masked number
        self.shape_keys: list[tuple[str, str | None]] = []
        self._shape_number: dict[tuple[str, str | None], int] = {}
        # (masked number, queue, reason, hour, shape number) -> [count, first, last]
        self.groups: dict[tuple[Any, ...], list[Any]] = {}
        self._attributes: list[pa.Table] = []  # (m, name, value, count_all) of each block
        self.message_ids: list[pa.Array] = []
        self.numbers: list[pa.Array] = []
        self.lines: list[pa.Array] = []  # each dead letter's line in the file
        self.starts: list[tuple[int, int]] = []  # each block's first line and offset

    def add(self, counted: Counted) -> None:
        ms = [self._numbered(self._number_of, self.masked, m) for m in counted.masked]
        ss = [self._numbered(self._shape_number, self.shape_keys, k) for k in counted.shape_keys]
        numbers = pc.take(pa.array(ms, pa.int32()), counted.numbers)
        if len(numbers):
            self.counts.update(
                {c["values"]: c["counts"] for c in pc.value_counts(numbers).to_pylist()}
            )
        self.message_ids.append(counted.message_ids)
        self.numbers.append(numbers)
        self.lines.append(counted.lines)
        if counted.attributes is not None:
            table = counted.attributes
            self._attributes.append(
                table.set_column(0, "m", pc.take(pa.array(ms, pa.int32()), table.column("m")))
            )
        g = counted.groups
        columns = [g.column(name).to_pylist() for name in [*_GROUP_BY, "t_min", "t_max"]]
        for m, q, r, hour, s, first, last, count in zip(
            *columns, g.column("m_count").to_pylist(), strict=True
        ):
            key = (ms[m], q, r, hour, ss[s])
            group = self.groups.get(key)
            if group is None:
                self.groups[key] = [count, first, last]
            else:
                group[0] += count
                if first is not None:
                    group[1] = first if group[1] is None else min(group[1], first)
                    group[2] = last if group[2] is None else max(group[2], last)

    @staticmethod
    def _numbered(number_of: dict[Any, int], items: list[Any], item: Any) -> int:
        number = number_of.get(item)
        if number is None:
            number = number_of[item] = len(items)
            items.append(item)
        return number

    def attribute_counts(self) -> pa.Table:
        """(m, name, value, n) over every block."""
        if not self._attributes:
            return pa.table(
                {"m": [], "name": [], "value": [], "n": []},
                schema=pa.schema(
                    [("m", pa.int32()), ("name", pa.string()), ("value", pa.string())]
                ).append(pa.field("n", pa.int64())),
            )
        whole = pa.concat_tables(self._attributes)
        return (
            whole.group_by(["m", "name", "value"], use_threads=False)
            .aggregate([("count_all", "sum")])
            .rename_columns(["m", "name", "value", "n"])
        )

    def columns(self) -> tuple[pa.Array, pa.Array, pa.Array]:
        """(message ids, masked numbers, line numbers) of every dead letter, in input order."""
        return (
            pa.concat_arrays(self.message_ids) if self.message_ids else pa.array([], pa.string()),
            pa.concat_arrays(self.numbers) if self.numbers else pa.array([], pa.int32()),
            pa.concat_arrays(self.lines) if self.lines else pa.array([], pa.int64()),
        )


def counted_blocks(
    path: Path, workers: Callable[[], int], starts: list[tuple[int, int]] | None = None
) -> Iterator[Counted]:
    """Each block of the export counted, in input order. The first is counted here; then
    `workers()` says how many processes count the rest: past one, this process and helpers
    forked from it (their caches are this one's as the first block left them), each helper
    a block or two ahead. Each block's first line and offset go to `starts`."""
    from deadletter.pipeline.reader import BLOCK_BYTES, blocks

    where = starts if starts is not None else []
    read = blocks(path, BLOCK_BYTES)
    for first, offset, data in read:
        where.append((first, offset))
        yield _count(first, data)
        break
    helpers = workers() - 1 if path.stat().st_size > HELPED_PAST_BLOCKS * BLOCK_BYTES else 0
    if helpers < 1:
        for first, offset, data in read:
            where.append((first, offset))
            yield _count(first, data)
        return
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(helpers, mp_context=context) as pool:
        pending: deque[Future[Counted] | Counted] = deque()
        for first, offset, data in read:
            where.append((first, offset))
            ahead = sum(1 for p in pending if isinstance(p, Future) and not p.done())
            if ahead < 2 * helpers:
                pending.append(pool.submit(_count, first, data))
            else:
                pending.append(_count(first, data))
            while pending and _ready(pending[0]):
                yield _result(pending.popleft())
        while pending:
            yield _result(pending.popleft())


def _ready(item: Future[Counted] | Counted) -> bool:
    return not isinstance(item, Future) or item.done()


def _result(item: Future[Counted] | Counted) -> Counted:
    return item.result() if isinstance(item, Future) else item


def _count(first: int, data: bytes) -> Counted:
    from deadletter.pipeline.reader import read_block

    return count_block(read_block(first, data))
