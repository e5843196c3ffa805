"""The in-process engine's counts over an export read block by block (reader.py): what the
summary needs of every dead letter, kept per distinct masked text and per group, never per
dead letter, save each one's message id and masked text's number (for the assignments).

Grouping is by Arrow's hash aggregation over each block's columns; masking by `Masker`, which
masks each distinct text once.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deadletter.pipeline.masking import Masked, Masker
from deadletter.pipeline.reader import Block

_GROUP_BY = ["m", "q", "r", "hour", "s"]


class Tally:
    """What `add` has seen of the dead letters so far."""

    def __init__(self) -> None:
        self.masker = Masker()
        self.masked: list[Masked] = []  # by number
        self._number_of: dict[Masked, int] = {}
        self.counts: Counter[int] = Counter()  # dead letters by masked number
        self.shape_keys: list[tuple[str, str | None]] = []
        self._shape_number: dict[tuple[str, str | None], int] = {}
        # (masked number, queue, reason, hour, shape number) -> [count, first, last]
        self.groups: dict[tuple[Any, ...], list[Any]] = {}
        self.attributes: Counter[tuple[int, str, str]] = Counter()
        self.message_ids: list[pa.Array] = []
        self.numbers: list[pa.Array] = []
        self.lines: list[pa.Array] = []  # each dead letter's line in the file

    @property
    def total(self) -> int:
        return sum(len(a) for a in self.message_ids)

    def add(self, block: Block) -> None:
        numbers = self._masked_numbers(block)
        shapes = self._shape_numbers(block)
        self.counts.update(numbers)
        n = len(numbers)
        self.message_ids.append(pa.array(block.message_ids, pa.string()))
        self.numbers.append(pa.array(numbers, pa.int32()))
        self.lines.append(pa.array(block.line_numbers, pa.int64()))
        self.attributes.update(
            (m, key, value)
            for m, found in zip(numbers, block.attributes, strict=True)
            if found
            for key, value in found.items()
            if value is not None
        )
        at = block.dead_lettered_at
        table = pa.table(
            {
                "m": pa.array(numbers, pa.int32()),
                "q": pa.array(block.source_queues, pa.string()),
                "r": pa.array(block.reasons, pa.string()),
                "hour": pc.floor_temporal(at, unit="hour") if n else at,
                "s": pa.array(shapes, pa.int32()),
                "t": at,
            }
        )
        found = table.group_by(_GROUP_BY, use_threads=False).aggregate(
            [("t", "min"), ("t", "max"), ("m", "count")]
        )
        for m, q, r, hour, s, first, last, count in zip(
            *(found.column(name).to_pylist() for name in [*_GROUP_BY, "t_min", "t_max", "m_count"]),
            strict=True,
        ):
            key = (m, q, r, hour, s)
            group = self.groups.get(key)
            if group is None:
                self.groups[key] = [count, first, last]
            else:
                group[0] += count
                if first is not None:
                    group[1] = first if group[1] is None else min(group[1], first)
                    group[2] = last if group[2] is None else max(group[2], last)

    def _masked_numbers(self, block: Block) -> list[int]:
        keys = zip(block.errors, block.descriptions, block.error_classes, strict=True)
        number_of = self._number_of
        out = []
        for masked in self.masker.mask_all(keys):
            number = number_of.get(masked)
            if number is None:
                number = number_of[masked] = len(self.masked)
                self.masked.append(masked)
            out.append(number)
        return out

    def _shape_numbers(self, block: Block) -> list[int]:
        number_of = self._shape_number
        out = []
        for key in block.shapes:
            number = number_of.get(key)
            if number is None:
                number = number_of[key] = len(self.shape_keys)
                self.shape_keys.append(key)
            out.append(number)
        return out

    def columns(self) -> tuple[pa.Array, pa.Array, pa.Array]:
        """(message ids, masked numbers, line numbers) of every dead letter, in input order."""
        return (
            pa.concat_arrays(self.message_ids) if self.message_ids else pa.array([], pa.string()),
            pa.concat_arrays(self.numbers) if self.numbers else pa.array([], pa.int32()),
            pa.concat_arrays(self.lines) if self.lines else pa.array([], pa.int64()),
        )
