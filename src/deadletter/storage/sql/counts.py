"""The counts the SQL stores keep by statement, and the stats read from them.

Queue depths by dead-letter source (`queue_depths`, migration 0005) and the numbers of hidden
messages by class (`queue_hidden`, migration 0013) are changed once per statement that adds,
moves, hides, shows or removes messages, rather than by a trigger on every row; every such
statement is in `SQLTransaction` and goes through `_add_depths` and `_add_hidden` here. Stats
read the counts and correct them by what time changed since the sweep last passed (expiry,
claims lapsed, delays ended), found through indexes by time, so they never count a queue.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from deadletter.storage.base import MessageCounts
from deadletter.storage.rows import Row, message_from
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.executor import Executor, Place


class CountStatements(Executor):
    def _add_depths(self, project: str, changes: Mapping[tuple[str, str], int]) -> None:
        """Change the depth of each (queue, source) by its count; in key order, so that two
        transactions never wait for each other's rows in turn."""
        rows = [
            {"project": project, "queue": queue, "source": source, "n": n}
            for (queue, source), n in sorted(changes.items())
            if n
        ]
        self.run_many(q.ADD_DEPTH, rows)

    def _add_hidden(self, project: str, changes: Mapping[tuple[str, int], int]) -> None:
        """Change the number of hidden messages of each (queue, class) by its count (the
        ready class, 0, is not kept); in key order, as `_add_depths`."""
        rows = [
            {"project": project, "queue": queue, "hidden": hidden, "n": n}
            for (queue, hidden), n in sorted(changes.items())
            if n and hidden
        ]
        self.run_many(q.ADD_HIDDEN, rows)

    def _remove_depths(self, project: str, queue: str, gone: Iterable[Row]) -> int:
        """Take the rows a deletion returned (`source` and `hidden` each) off `queue`'s
        counts; how many."""
        rows = list(gone)
        sources = Counter((queue, str(r["source"])) for r in rows)
        hidden = Counter((queue, int(r["hidden"])) for r in rows)
        with self.together():
            self._add_depths(project, {key: -n for key, n in sources.items()})
            self._add_hidden(project, {key: -n for key, n in hidden.items()})
        return sources.total()

    def _move_counts(
        self,
        project: str,
        before: Iterable[Place],
        depths: Counter[tuple[str, str]],
        hidden: Counter[tuple[str, int]],
    ) -> None:
        """Change the counts by what moved in (`depths` and `hidden`, the counts of the
        rewritten rows) less where the rows were `before`."""
        for queue, source, cls in before:
            depths[(queue, source)] -= 1
            hidden[(queue, cls)] -= 1
        with self.together():
            self._add_depths(project, depths)
            self._add_hidden(project, hidden)

    def _depths(
        self, project: str, queue: str, now: float, hidden: Counter[int] | None = None
    ) -> dict[str, int]:
        """Unexpired messages of `queue` by dead-letter source ('' for none); `hidden`, where
        given, is the kept count by class and loses the expired ones too."""
        key = {"project": project, "queue": queue, "now": now}
        depths = {r["source"]: int(r["n"]) for r in self.all(q.DEPTHS, key)}
        for r in self.all(q.EXPIRED_DEPTHS, key):
            depths[r["source"]] = depths.get(r["source"], 0) - int(r["n"])
            if hidden is not None:
                hidden[int(r["hidden"])] -= int(r["n"])
        return depths

    def settle_hidden(self, now: float, limit: int) -> int:
        settled = 0
        for place in self.all(q.HIDDEN_QUEUES, {}):
            key = {"project": place["project"], "queue": place["queue"]}
            rows = self.all(q.SETTLE_HIDDEN, {**key, "now": now, "limit": limit - settled})
            for r in rows:  # read anew by a later write of this transaction
                self._places.pop(r["id"], None)
            shown = Counter((place["queue"], int(r["hidden"])) for r in rows)
            self._add_hidden(place["project"], {k: -n for k, n in shown.items()})
            settled += len(rows)
            if settled >= limit:
                break
        return settled

    def counts(self, project: str, queue: str, now: float, backoff: int = 0) -> MessageCounts:
        """Claimed and delayed are the kept counts of classes 2 and 1, less those expired
        and those that have become visible since the sweep last settled them; a claimed
        message whose claim lapsed less than `backoff` seconds ago and that still serves
        its backoff counts as delayed."""
        key = {"project": project, "queue": queue, "now": now}
        hidden = Counter({int(r["hidden"]): int(r["n"]) for r in self.all(q.HIDDEN_COUNTS, key)})
        for r in self.all(q.SHOWN_SINCE_SETTLED, key):
            hidden[int(r["hidden"])] -= int(r["n"])
        if backoff > 0:
            row = self.one(q.LAPSED_IN_BACKOFF, {**key, "backoff_end": now + backoff})
            backing_off = int(row["n"]) if row else 0
            hidden[2] -= backing_off
            hidden[1] += backing_off
        oldest, newest = self.one(q.OLDEST_MESSAGE, key), self.one(q.NEWEST_MESSAGE, key)
        total = sum(self._depths(project, queue, now, hidden).values())
        claimed, delayed = hidden[2], hidden[1]
        return MessageCounts(
            free=total - claimed - delayed,
            claimed=claimed,
            delayed=delayed,
            oldest=message_from(oldest) if oldest else None,
            newest=message_from(newest) if newest else None,
        )

    def size(self, project: str, queue: str, now: float, with_bytes: bool) -> tuple[int, int]:
        count = sum(self._depths(project, queue, now).values())
        if not with_bytes:
            return count, 0
        key = {"project": project, "queue": queue, "now": now}
        return count, int(self.one(q.BODY_BYTES, key)["n"])

    def next_visible(self, project: str, queue: str, now: float) -> float | None:
        row = self.one(q.NEXT_VISIBLE, {"project": project, "queue": queue, "now": now})
        return None if row is None or row["at"] is None else float(row["at"])

    def count_by_source(self, project: str, dlq: str, now: float) -> dict[str, int]:
        depths = self._depths(project, dlq, now)
        return {source: n for source, n in sorted(depths.items()) if source and n > 0}

    # Counters

    def bump_counter(self, project: str, queue: str, name: str, amount: int) -> None:
        self.run(
            q.BUMP_COUNTER, {"project": project, "queue": queue, "name": name, "amount": amount}
        )

    def counters(self, project: str, queue: str) -> dict[str, int]:
        rows = self.all(q.COUNTERS, {"project": project, "queue": queue})
        return {r["name"]: int(r["value"]) for r in rows}
