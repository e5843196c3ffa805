"""Statements of project administration: credentials, queue templates, redrive tasks and
failure patterns."""

from __future__ import annotations

import json
from typing import Any

from deadletter.domain.auto_redrive import AutoRedrive
from deadletter.domain.redrive import RedriveTask
from deadletter.domain.templates import QueueTemplate
from deadletter.storage.base import CredentialRecord
from deadletter.storage.rows import (
    auto_redrive_from,
    auto_redrive_params,
    credential_from,
    credential_params,
    task_from,
    task_params,
    template_from,
    template_params,
)
from deadletter.storage.sql import auto_redrive_queries as aq
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.executor import Executor


class AdministrationStatements(Executor):
    # Credentials

    def insert_credential(self, credential: CredentialRecord) -> None:
        self.run(q.INSERT_CREDENTIAL, credential_params(credential))

    def get_credential(self, key_id: str, lock: bool = False) -> CredentialRecord | None:
        sql = q.GET_CREDENTIAL_LOCKED if lock else q.GET_CREDENTIAL
        r = self.one(sql, {"key_id": key_id})
        return credential_from(r) if r else None

    def list_credentials(self, project: str | None) -> list[CredentialRecord]:
        return [credential_from(r) for r in self.all(q.LIST_CREDENTIALS, {"project": project})]

    def update_credential(self, credential: CredentialRecord) -> None:
        self.run(q.UPDATE_CREDENTIAL, credential_params(credential))

    def account_projects(self, account_id: str) -> set[str]:
        rows = self.all(q.ACCOUNT_PROJECTS, {"account_id": account_id})
        return {r["project"] for r in rows}

    # Queue templates

    def insert_template(self, template: QueueTemplate) -> bool:
        return self.run(q.INSERT_TEMPLATE, template_params(template)) == 1

    def get_template(self, project: str, name: str) -> QueueTemplate | None:
        r = self.one(q.GET_TEMPLATE, {"project": project, "name": name})
        return template_from(r) if r else None

    def list_templates(self, project: str) -> list[QueueTemplate]:
        return [template_from(r) for r in self.all(q.LIST_TEMPLATES, {"project": project})]

    def templates_to_change(self, project: str) -> list[QueueTemplate]:
        # SQLite's one writer already keeps the changes of a project apart.
        return self.list_templates(project)

    def update_template(self, template: QueueTemplate) -> None:
        self.run(q.UPDATE_TEMPLATE, template_params(template))

    def delete_template(self, project: str, name: str) -> bool:
        return self.run(q.DELETE_TEMPLATE, {"project": project, "name": name}) > 0

    # Redrive tasks

    def insert_task(self, task: RedriveTask) -> None:
        self.run(q.INSERT_TASK, task_params(task))

    def get_task(self, task_id: str, lock: bool = False) -> RedriveTask | None:
        r = self.one(q.GET_TASK_LOCKED if lock else q.GET_TASK, {"id": task_id})
        return task_from(r) if r else None

    def update_task(self, task: RedriveTask) -> None:
        self.run(q.UPSERT_TASK, task_params(task))

    def list_tasks(self, project: str, dlq: str | None, limit: int) -> list[RedriveTask]:
        rows = self.all(q.LIST_TASKS, {"project": project, "dlq": dlq, "limit": limit})
        return [task_from(r) for r in rows]

    def active_task_ids(self) -> list[str]:
        return [r["id"] for r in self.all(q.ACTIVE_TASK_IDS, {})]

    # Failure patterns

    def save_patterns(self, project: str, dlq: str, patterns: list[dict[str, Any]]) -> None:
        self.run(
            q.SAVE_PATTERNS, {"project": project, "dlq": dlq, "patterns": json.dumps(patterns)}
        )

    def get_patterns(self, project: str, dlq: str) -> list[dict[str, Any]]:
        r = self.one(q.GET_PATTERNS, {"project": project, "dlq": dlq})
        return list(json.loads(r["patterns"])) if r else []

    def save_pattern_batches(self, project: str, dlq: str, batches: dict[str, int]) -> None:
        self.run(
            q.SAVE_PATTERN_BATCHES,
            {"project": project, "dlq": dlq, "batches": json.dumps(batches)},
        )

    def get_pattern_batches(self, project: str, dlq: str) -> dict[str, int]:
        r = self.one(q.GET_PATTERN_BATCHES, {"project": project, "dlq": dlq})
        return dict(json.loads(r["batches"])) if r else {}

    # Automatic redrive policies

    def get_auto_redrive(self, project: str, dlq: str, lock: bool = False) -> AutoRedrive | None:
        sql = aq.GET_AUTO_REDRIVE_LOCKED if lock else aq.GET_AUTO_REDRIVE
        r = self.one(sql, {"project": project, "dlq": dlq})
        return auto_redrive_from(r) if r else None

    def put_auto_redrive(self, policy: AutoRedrive) -> None:
        self.run(aq.PUT_AUTO_REDRIVE, auto_redrive_params(policy))

    def delete_auto_redrive(self, project: str, dlq: str) -> bool:
        return self.run(aq.DELETE_AUTO_REDRIVE, {"project": project, "dlq": dlq}) > 0

    def due_auto_redrives(self, now: float) -> list[tuple[str, str]]:
        return [(r["project"], r["dlq"]) for r in self.all(aq.DUE_AUTO_REDRIVES, {"now": now})]
