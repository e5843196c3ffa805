"""Statements of consumer tags: their rows, and each tag's delivery state of the messages it
has touched."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from deadletter.domain.model import Message
from deadletter.domain.tags import DEFAULT_DONE_AT, ConsumerTag, Delivery, TagState, seen_by_tag
from deadletter.storage.rows import Row, message_from
from deadletter.storage.sql import tag_queries as t
from deadletter.storage.sql.executor import Executor


def tag_params(tag: ConsumerTag) -> dict[str, Any]:
    return {
        "project": tag.project,
        "queue": tag.queue,
        "name": tag.name,
        "created_at": tag.created_at,
        "start_seq": tag.start_seq,
        "start_at": tag.start_at,
        "filter_attribute": tag.filter_attribute,
        "filter_value": tag.filter_value,
        "cursor_seq": tag.cursor_seq,
    }


def tag_from(r: Row) -> ConsumerTag:
    return ConsumerTag(
        project=r["project"],
        queue=r["queue"],
        name=r["name"],
        created_at=r["created_at"],
        start_seq=int(r["start_seq"]),
        start_at=r["start_at"],
        filter_attribute=r["filter_attribute"],
        filter_value=r["filter_value"],
        cursor_seq=int(r["cursor_seq"]),
    )


def _view(r: Row) -> tuple[Message, TagState | None]:
    """A message as the tag sees it, from a row of a statement with `_STATE_COLUMNS`."""
    state = r["t_state"]
    if state is None:
        return seen_by_tag(message_from(r), None), None
    delivery = Delivery(
        state=TagState(state),
        claim_id=r["t_claim_id"],
        claim_expires_at=r["t_claim_expires_at"],
        visible_at=r["t_visible_at"],
        claim_count=int(r["t_claim_count"]),
        first_claimed_at=r["t_first_claimed_at"],
        dead_letter_due_at=r["t_dl_due_at"],
    )
    return seen_by_tag(message_from(r), delivery), delivery.state


class TagStatements(Executor):
    def insert_tag(self, tag: ConsumerTag) -> bool:
        return self.run(t.INSERT_TAG, tag_params(tag)) > 0

    def get_tag(
        self, project: str, queue: str, name: str, lock: bool = False
    ) -> ConsumerTag | None:
        key = {"project": project, "queue": queue, "name": name}
        r = self.one(t.GET_TAG_LOCKED if lock else t.GET_TAG, key)
        return tag_from(r) if r else None

    def list_tags(self, project: str, queue: str) -> list[ConsumerTag]:
        return [tag_from(r) for r in self.all(t.LIST_TAGS, {"project": project, "queue": queue})]

    def delete_tag(self, project: str, queue: str, name: str) -> None:
        for sql in t.DELETE_TAG:
            self.run(sql, {"project": project, "queue": queue, "name": name})

    def _unseen_params(self, tag: ConsumerTag) -> dict[str, Any]:
        return {
            "project": tag.project,
            "queue": tag.queue,
            "tag": tag.name,
            "after": max(tag.cursor_seq, tag.start_seq),
            "start_at": tag.start_at,
        }

    def tag_claimable(
        self, tag: ConsumerTag, now: float, limit: int
    ) -> list[tuple[Message, TagState | None]]:
        params = {**self._unseen_params(tag), "now": now, "limit": limit}
        new = [
            (seen_by_tag(message_from(r), None), None)
            for r in self.all(t.TAG_CLAIMABLE_NEW, params)
        ]
        again = [_view(r) for r in self.all(t.TAG_CLAIMABLE_AGAIN, params)]
        return sorted(new + again, key=lambda v: v[0].seq)[:limit]

    def advance_tag_cursor(self, tag: ConsumerTag) -> None:
        row = self.one(t.TAG_FIRST_UNSEEN, self._unseen_params(tag))
        if row is not None:
            cursor = int(row["seq"]) - 1
        else:
            cursor = int(
                self.one(t.MAX_QUEUE_SEQ, {"project": tag.project, "queue": tag.queue})["n"]
            )
        if cursor > tag.cursor_seq:
            self.run(t.SET_TAG_CURSOR, {"project": tag.project, "queue": tag.queue,
                                        "name": tag.name, "cursor_seq": cursor})  # fmt: skip

    def tag_messages(
        self, project: str, queue: str, tag: str, ids: Sequence[str], lock: bool = False
    ) -> list[tuple[Message, TagState | None]]:
        params = {"project": project, "queue": queue, "tag": tag, "ids": list(ids)}
        if not lock:
            return [_view(r) for r in self.all(t.TAG_VIEWS, params)]
        # Only a state can be locked (a lock on the outer join's nullable side is refused):
        # the messages the tag has none of are read as they are.
        views = [_view(r) for r in self.all(t.TAG_VIEWS_LOCKED, params)]
        seen = {m.id for m, _ in views}
        rest = [i for i in ids if i not in seen]
        if rest:
            views += [_view(r) for r in self.all(t.TAG_VIEWS, {**params, "ids": rest})]
        return sorted(views, key=lambda view: view[0].seq)

    def tag_claimed_by(
        self, project: str, queue: str, tag: str, claim_id: str, lock: bool = False
    ) -> list[Message]:
        params = {"project": project, "queue": queue, "tag": tag, "claim_id": claim_id}
        sql = t.TAG_CLAIMED_BY_LOCKED if lock else t.TAG_CLAIMED_BY
        return [_view(r)[0] for r in self.all(sql, params)]

    def save_tag_states(
        self, project: str, queue: str, tag: str, messages: Sequence[Message], state: TagState
    ) -> None:
        live = state is TagState.LIVE
        self.run_many(
            t.SAVE_TAG_STATE,
            [
                {
                    "message_id": m.id,
                    "tag": tag,
                    "project": project,
                    "queue": queue,
                    "seq": m.seq,
                    "state": state.value,
                    "claim_id": m.claim_id if live else None,
                    "claim_expires_at": m.claim_expires_at if live else None,
                    "visible_at": m.visible_at,
                    "claim_count": m.claim_count,
                    "first_claimed_at": m.first_claimed_at,
                    "dl_due_at": m.dead_letter_due_at if live else None,
                }
                for m in messages
            ],
        )

    def due_tag_dead_letters(self, params: dict[str, Any]) -> list[tuple[str, str | None, Message]]:
        """`Transaction.due_dead_letters` of tags: (project, tag, message as the tag sees it)."""
        rows = self.all(t.DUE_TAG_DEAD_LETTERS, params)
        return [(r["project"], r["t_tag"], _view(r)[0]) for r in rows]

    def extend_lives(self, project: str, messages: Sequence[Message]) -> None:
        rows = [
            {"id": m.id, "project": project, "expires_at": m.expires_at}
            for m in sorted(messages, key=lambda m: m.seq)
        ]
        if rows:
            self.run_many(t.EXTEND_LIFE, rows)

    def final_tag_states(self, ids: Sequence[str]) -> dict[str, set[str]]:
        done: dict[str, set[str]] = defaultdict(set)
        for r in self.all(t.FINAL_TAG_STATES, {"ids": list(ids)}):
            done[r["message_id"]].add(r["tag"])
        return done

    def forget_tag_states(self, ids: Sequence[str]) -> None:
        if ids:
            self.run(t.FORGET_TAG_STATES, {"ids": list(ids)})

    def lock_messages(self, ids: Sequence[str]) -> list[Message]:
        return [self._locked_message(r) for r in self.all(t.LOCK_MESSAGES, {"ids": sorted(ids)})]

    def tag_counts(self, tag: ConsumerTag, now: float) -> tuple[int, int]:
        params = {**self._unseen_params(tag), "now": now}
        unseen = int(self.one(t.TAG_READY, params)["n"])
        live = self.one(t.TAG_LIVE, params)
        return unseen + int(live["ready"] or 0), int(live["claimed"] or 0)

    def count_default_done(self, project: str, queue: str, now: float) -> int:
        params = {"project": project, "queue": queue, "now": now, "done": DEFAULT_DONE_AT}
        return int(self.one(t.COUNT_DEFAULT_DONE, params)["n"])

    def default_done_ids(self, project: str, queue: str) -> list[str]:
        params = {"project": project, "queue": queue, "done": DEFAULT_DONE_AT}
        return [r["id"] for r in self.all(t.DEFAULT_DONE_IDS, params)]
