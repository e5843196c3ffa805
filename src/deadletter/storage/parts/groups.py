"""Consumer groups (consumer tags) and each group's delivery state of a message.

The rules are deadletter.engine.tags' and deadletter.engine.groups'; the design is
docs/architecture.md's.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from deadletter.domain.model import Message
from deadletter.domain.tags import ConsumerTag, TagState


class Groups(abc.ABC):
    """Consumer groups (consumer tags) and each group's delivery state of a message."""

    @abc.abstractmethod
    def insert_tag(self, tag: ConsumerTag) -> bool:
        """False, and nothing written, when the queue has a tag of that name."""

    @abc.abstractmethod
    def get_tag(
        self, project: str, queue: str, name: str, lock: bool = False
    ) -> ConsumerTag | None:
        """With `lock`, the tag's other claimants wait until this transaction ends."""

    @abc.abstractmethod
    def list_tags(self, project: str, queue: str) -> list[ConsumerTag]:
        """By name."""

    @abc.abstractmethod
    def delete_tag(self, project: str, queue: str, name: str) -> None:
        """The tag and its delivery states."""

    @abc.abstractmethod
    def tag_claimable(
        self, tag: ConsumerTag, now: float, limit: int
    ) -> list[tuple[Message, TagState | None]]:
        """The oldest messages `tag` may claim now (its filter aside), untouched above its
        cursor or given back and due, as the tag sees them (`tags.seen_by_tag`), with state."""

    @abc.abstractmethod
    def advance_tag_cursor(self, tag: ConsumerTag) -> None:
        """Move the tag's cursor up to just before the first message it has not touched,
        where that is known to be safe (no message below it can still commit); otherwise it
        stays, and a later call moves it."""

    @abc.abstractmethod
    def tag_messages(
        self, project: str, queue: str, tag: str, ids: Sequence[str], lock: bool = False
    ) -> list[tuple[Message, TagState | None]]:
        """Messages of `queue` among `ids` as `tag` sees them, with its state of each, oldest
        first. With `lock`, the states stay locked until this transaction ends
        (`Transaction`); a message the tag never touched has none to lock."""

    @abc.abstractmethod
    def tag_claimed_by(
        self, project: str, queue: str, tag: str, claim_id: str, lock: bool = False
    ) -> list[Message]:
        """As `tag` sees them, the messages whose state for it names `claim_id`; with `lock`,
        their state rows stay locked until this transaction ends."""

    @abc.abstractmethod
    def save_tag_states(
        self, project: str, queue: str, tag: str, messages: Sequence[Message], state: TagState
    ) -> None:
        """`state`, with the delivery fields of each message as the tag sees it (LIVE: claim)."""

    @abc.abstractmethod
    def final_tag_states(self, ids: Sequence[str]) -> dict[str, set[str]]:
        """By message id, the tags done with it (acknowledged, dead-lettered, skipped)."""

    @abc.abstractmethod
    def forget_tag_states(self, ids: Sequence[str]) -> None: ...

    @abc.abstractmethod
    def default_done_ids(self, project: str, queue: str) -> list[str]: ...
