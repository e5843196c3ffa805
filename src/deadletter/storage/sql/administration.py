"""Statements of project administration: credentials and queue templates."""

from __future__ import annotations

from deadletter.domain.templates import QueueTemplate
from deadletter.storage.base import CredentialRecord
from deadletter.storage.rows import (
    credential_from,
    credential_params,
    template_from,
    template_params,
)
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

    def update_template(self, template: QueueTemplate) -> None:
        self.run(q.UPDATE_TEMPLATE, template_params(template))

    def delete_template(self, project: str, name: str) -> bool:
        return self.run(q.DELETE_TEMPLATE, {"project": project, "name": name}) > 0
