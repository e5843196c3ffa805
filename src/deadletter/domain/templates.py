"""Queue templates: the settings a project's new queues take when their names match a
pattern (Solace's endpoint templates)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deadletter.domain.policies import RetryPolicy


@dataclass(frozen=True)
class TemplateSettings:
    """What a queue template sets on the queues it matches; None leaves the setting alone.

    `max_claims` without `dlq` dead-letters to the project's default DLQ.
    """

    max_claims: int | None = None
    dlq: str | None = None
    dlq_message_ttl: int | None = None
    on_expiry: bool | None = None
    default_ttl: int | None = None
    max_ttl: int | None = None
    min_ttl: int | None = None
    respect_ttl: bool | None = None
    dead_letter_eligible: bool | None = None
    retry_policy: RetryPolicy | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_claims": self.max_claims,
            "dlq": self.dlq,
            "dlq_message_ttl": self.dlq_message_ttl,
            "on_expiry": self.on_expiry,
            "default_ttl": self.default_ttl,
            "max_ttl": self.max_ttl,
            "min_ttl": self.min_ttl,
            "respect_ttl": self.respect_ttl,
            "dead_letter_eligible": self.dead_letter_eligible,
            "retry_policy": self.retry_policy.to_dict() if self.retry_policy else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TemplateSettings:
        values = {k: data.get(k) for k in cls().to_dict()}
        policy = values["retry_policy"]
        values["retry_policy"] = RetryPolicy.from_dict(policy) if policy else None
        return cls(**values)


@dataclass(frozen=True)
class QueueTemplate:
    """Settings for the queues of a project whose names match `pattern` (a glob), applied
    when such a queue is created without them (Solace's endpoint templates)."""

    project: str
    name: str
    pattern: str
    settings: TemplateSettings
    created_at: float
    updated_at: float
