"""Statements of project administration: credentials and queue templates."""

from __future__ import annotations

import json
from typing import Any

from deadletter.domain.model import QueueTemplate, TemplateSettings
from deadletter.storage.base import CredentialRecord
from deadletter.storage.rows import Row
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.executor import Executor


class AdministrationStatements(Executor):
    # Credentials

    def insert_credential(self, credential: CredentialRecord) -> None:
        self.run(q.INSERT_CREDENTIAL, _credential_params(credential))

    def get_credential(self, key_id: str, lock: bool = False) -> CredentialRecord | None:
        sql = q.GET_CREDENTIAL_LOCKED if lock else q.GET_CREDENTIAL
        r = self.one(sql, {"key_id": key_id})
        return _credential_from(r) if r else None

    def list_credentials(self, project: str | None) -> list[CredentialRecord]:
        return [_credential_from(r) for r in self.all(q.LIST_CREDENTIALS, {"project": project})]

    def update_credential(self, credential: CredentialRecord) -> None:
        self.run(q.UPDATE_CREDENTIAL, _credential_params(credential))

    def account_projects(self, account_id: str) -> set[str]:
        rows = self.all(q.ACCOUNT_PROJECTS, {"account_id": account_id})
        return {r["project"] for r in rows}

    # Queue templates

    def insert_template(self, template: QueueTemplate) -> bool:
        return self.run(q.INSERT_TEMPLATE, _template_params(template)) == 1

    def get_template(self, project: str, name: str) -> QueueTemplate | None:
        r = self.one(q.GET_TEMPLATE, {"project": project, "name": name})
        return _template_from(r) if r else None

    def list_templates(self, project: str) -> list[QueueTemplate]:
        return [_template_from(r) for r in self.all(q.LIST_TEMPLATES, {"project": project})]

    def update_template(self, template: QueueTemplate) -> None:
        self.run(q.UPDATE_TEMPLATE, _template_params(template))

    def delete_template(self, project: str, name: str) -> bool:
        return self.run(q.DELETE_TEMPLATE, {"project": project, "name": name}) > 0


def _credential_params(c: CredentialRecord) -> dict[str, Any]:
    return {f: getattr(c, f) for f in q.CREDENTIAL_FIELDS}


def _credential_from(r: Row) -> CredentialRecord:
    return CredentialRecord(
        key_id=r["key_id"],
        project=r["project"],
        role=r["role"],
        account_id=r["account_id"],
        sealed_secret=r["sealed_secret"],
        created_at=r["created_at"],
        revoked=bool(r["revoked"]),
    )


def _template_params(t: QueueTemplate) -> dict[str, Any]:
    return {
        "project": t.project,
        "name": t.name,
        "pattern": t.pattern,
        "settings": json.dumps(t.settings.to_dict()),
        "created_at": t.created_at,
        "updated_at": t.updated_at,
    }


def _template_from(r: Row) -> QueueTemplate:
    return QueueTemplate(
        project=r["project"],
        name=r["name"],
        pattern=r["pattern"],
        settings=TemplateSettings.from_dict(json.loads(r["settings"])),
        created_at=r["created_at"],
        updated_at=r["updated_at"],
    )
