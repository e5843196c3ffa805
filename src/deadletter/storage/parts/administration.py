"""Redrive tasks, automatic redrive policies, failure patterns, credentials, queue templates
and the test-mode wipe."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any

from deadletter.domain.auto_redrive import AutoRedrive
from deadletter.domain.redrive import RedriveTask
from deadletter.domain.templates import QueueTemplate


@dataclass(frozen=True)
class CredentialRecord:
    """A credential as stored: the secret only sealed (deadletter.auth.credentials)."""

    key_id: str
    project: str
    role: str
    account_id: str
    sealed_secret: str
    created_at: float
    revoked: bool


class Administration(abc.ABC):
    """Redrive tasks, failure patterns, credentials, queue templates and the test-mode wipe."""

    @abc.abstractmethod
    def insert_task(self, task: RedriveTask) -> None: ...

    @abc.abstractmethod
    def get_task(self, task_id: str, lock: bool = False) -> RedriveTask | None: ...

    @abc.abstractmethod
    def update_task(self, task: RedriveTask) -> None: ...

    @abc.abstractmethod
    def list_tasks(self, project: str, dlq: str | None, limit: int) -> list[RedriveTask]:
        """Newest first."""

    @abc.abstractmethod
    def active_task_ids(self) -> list[str]:
        """Ids of RUNNING and CANCELLING tasks, across projects."""

    # Automatic redrive policies, one per DLQ
    @abc.abstractmethod
    def get_auto_redrive(
        self, project: str, dlq: str, lock: bool = False
    ) -> AutoRedrive | None: ...

    @abc.abstractmethod
    def put_auto_redrive(self, policy: AutoRedrive) -> None:
        """Insert the DLQ's policy, or replace it."""

    @abc.abstractmethod
    def delete_auto_redrive(self, project: str, dlq: str) -> bool: ...

    @abc.abstractmethod
    def due_auto_redrives(self, now: float) -> list[tuple[str, str]]:
        """(project, dlq) of the active policies with a round due at `now`, or whose round in
        flight has a task that ended, across projects."""

    # Failure patterns posted by the analysis pipeline
    @abc.abstractmethod
    def save_patterns(self, project: str, dlq: str, patterns: list[dict[str, Any]]) -> None: ...

    @abc.abstractmethod
    def get_patterns(self, project: str, dlq: str) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    def save_pattern_batches(self, project: str, dlq: str, batches: dict[str, int]) -> None:
        """The last micro-batch each writer merged into the DLQ's patterns, kept beside them."""

    @abc.abstractmethod
    def get_pattern_batches(self, project: str, dlq: str) -> dict[str, int]: ...

    @abc.abstractmethod
    def insert_credential(self, credential: CredentialRecord) -> None: ...

    @abc.abstractmethod
    def get_credential(self, key_id: str, lock: bool = False) -> CredentialRecord | None: ...

    @abc.abstractmethod
    def list_credentials(self, project: str | None) -> list[CredentialRecord]:
        """Oldest first; every project's with None."""

    @abc.abstractmethod
    def update_credential(self, credential: CredentialRecord) -> None:
        """Store the role, sealed secret and revoked flag of an existing credential."""

    @abc.abstractmethod
    def account_projects(self, account_id: str) -> set[str]:
        """The projects whose credentials carry `account_id`."""

    @abc.abstractmethod
    def insert_template(self, template: QueueTemplate) -> bool:
        """False, and nothing written, when the project has a template of that name."""

    @abc.abstractmethod
    def get_template(self, project: str, name: str) -> QueueTemplate | None: ...

    @abc.abstractmethod
    def list_templates(self, project: str) -> list[QueueTemplate]:
        """By name."""

    @abc.abstractmethod
    def templates_to_change(self, project: str) -> list[QueueTemplate]:
        """`list_templates`, for a change that must see every template of the project (the
        cap, a pattern taken): concurrent calls for one project wait for one another until
        each transaction ends, so a check followed by a write is exact."""

    @abc.abstractmethod
    def update_template(self, template: QueueTemplate) -> None:
        """Store the pattern, settings and update time of an existing template."""

    @abc.abstractmethod
    def delete_template(self, project: str, name: str) -> bool: ...

    @abc.abstractmethod
    def wipe(self) -> None:
        """Delete every queue and what belongs to it (test mode's reset); credentials stay."""
