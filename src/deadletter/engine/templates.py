"""Queue templates: a project's name patterns, which one a new queue matches, and what it sets.

Solace's endpoint templates give the queues clients create on the fly their settings (a DMQ,
TTL rules). Here a template applies to a queue created without those settings: one a
Zaqar client creates by posting its first message, or creates with metadata that leaves
them out. What the creator states wins over the template; the template over the defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from fnmatch import fnmatchcase
from typing import Any

from deadletter.clock import Clock
from deadletter.domain import errors
from deadletter.domain.limits import TEMPLATES_PER_PROJECT
from deadletter.domain.model import DEFAULT_DEAD_LETTER_QUEUE, Queue, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.templates import QueueTemplate, TemplateSettings
from deadletter.engine import queues, validation
from deadletter.engine.transactions import Pending, Runner
from deadletter.storage.base import Transaction

GLOB_CHARACTERS = "*?["


def literal_prefix(pattern: str) -> int:
    """How many characters of `pattern` come before its first wildcard: the longer, the more
    specific the template."""
    return next((i for i, c in enumerate(pattern) if c in GLOB_CHARACTERS), len(pattern))


def matching(templates: Sequence[QueueTemplate], queue: str) -> QueueTemplate | None:
    """The template for `queue`: among those whose pattern matches, the one with the longest
    literal prefix; of equally specific ones, the first by template name."""
    found = [t for t in templates if fnmatchcase(queue, t.pattern)]
    return min(found, key=lambda t: (-literal_prefix(t.pattern), t.name), default=None)


def applied(t: TemplateSettings, base: QueueSettings, queue: str, is_dlq: bool) -> QueueSettings:
    """`base` with what the template sets. A DLQ (the template's own, the default one, or any
    queue some policy names) gets no dead-letter policy from it: no chains, and never its own."""
    changes: dict[str, Any] = {
        field: value
        for field, value in (
            ("default_ttl", t.default_ttl),
            ("max_ttl", t.max_ttl),
            ("min_ttl", t.min_ttl),
            ("respect_ttl", t.respect_ttl),
            ("dead_letter_eligible", t.dead_letter_eligible),
            ("retry_policy", t.retry_policy),
        )
        if value is not None
    }
    settings = base.with_changes(**changes)
    if t.default_ttl is None and settings.respect_ttl is None:
        # A template's lower maximum brings the inherited default down with it.
        settings = settings.with_changes(default_ttl=min(settings.default_ttl, settings.max_ttl))
    target = t.dlq or DEFAULT_DEAD_LETTER_QUEUE
    if t.max_claims is None or is_dlq or target == queue or queue == DEFAULT_DEAD_LETTER_QUEUE:
        return settings
    return settings.with_changes(
        dead_letter=DeadLetterPolicy(
            target=target,
            max_claims=t.max_claims,
            message_ttl=t.dlq_message_ttl,
            on_expiry=bool(t.on_expiry),
        ),
        dead_letter_default=t.dlq is None,
    )


class Templates:
    """The engine's template operations (`engine.templates`), each one transaction."""

    def __init__(self, runner: Runner, clock: Clock, queue_quota: int | None) -> None:
        self._run = runner.run
        self._clock = clock
        self._queue_quota = queue_quota

    def create(
        self, project: str, name: str, *, pattern: str, settings: TemplateSettings
    ) -> QueueTemplate:
        validation.check_template(name, pattern, settings)
        now = self._clock.now()
        template = QueueTemplate(project, name, pattern, settings, now, now)

        def work(tx: Transaction, _: Pending) -> QueueTemplate:
            held = tx.templates_to_change(project)
            if len(held) >= TEMPLATES_PER_PROJECT:
                raise errors.LimitExceeded(
                    f"project {project!r} already holds {TEMPLATES_PER_PROJECT} templates, the"
                    " most one project may hold; delete one first"
                )
            _pattern_free(held, name, pattern)
            if not tx.insert_template(template):
                raise errors.TemplateAlreadyExists(f"template {name!r} already exists")
            return template

        return self._run(work)

    def get(self, project: str, name: str) -> QueueTemplate:
        return self._run(lambda tx, _: _require(tx, project, name))

    def all(self, project: str) -> list[QueueTemplate]:
        """The project's templates, by name."""
        return self._run(lambda tx, _: tx.list_templates(project))

    def page(self, project: str, *, after: str | None, limit: int) -> list[QueueTemplate]:
        """Up to `limit` of the project's templates named after `after`, by name."""
        found = self.all(project)
        return [t for t in found if after is None or t.name > after][:limit]

    def change(
        self, project: str, name: str, *, change: Callable[[QueueTemplate], QueueTemplate]
    ) -> QueueTemplate:
        """Read a template, apply `change` (its pattern and settings) and store the result in
        one transaction; queues made from it before keep their settings."""

        def work(tx: Transaction, _: Pending) -> QueueTemplate:
            held = tx.templates_to_change(project)
            old = _require(tx, project, name)
            new = change(old)
            validation.check_template(name, new.pattern, new.settings)
            _pattern_free(held, name, new.pattern)
            changed = replace(new, project=project, name=name, updated_at=self._clock.now())
            tx.update_template(changed)
            return changed

        return self._run(work)

    def delete(self, project: str, name: str) -> bool:
        return self._run(lambda tx, _: tx.delete_template(project, name))

    def for_queue(self, project: str, queue: str) -> QueueTemplate | None:
        """The template a queue of this name would be created from, if any."""
        return self._run(lambda tx, _: matching(tx.list_templates(project), queue))

    def create_queue(
        self,
        project: str,
        name: str,
        *,
        build: Callable[[QueueSettings], QueueSettings] | None = None,
        base: QueueSettings | None = None,
    ) -> Queue:
        """Create queue `name` from its template: `build` gets `base` (the defaults) with the
        matching template applied, and returns the settings to create it with (the
        creator's own on top); without `build` the template's are used as they are."""

        def work(tx: Transaction, _: Pending) -> Queue:
            settings = base or QueueSettings()
            template = matching(tx.list_templates(project), name)
            if template is not None:
                is_dlq = name in tx.dead_letter_targets(project)
                settings = applied(template.settings, settings, name, is_dlq)
            if build is not None:
                settings = build(settings)
            now = self._clock.now()
            return queues.create(
                tx, project, name, settings=settings, now=now, quota=self._queue_quota
            )

        return self._run(work)


def _require(tx: Transaction, project: str, name: str) -> QueueTemplate:
    template = tx.get_template(project, name)
    if template is None:
        raise errors.NotFound(f"template {name!r} does not exist")
    return template


def _pattern_free(templates: Sequence[QueueTemplate], name: str, pattern: str) -> None:
    """Refuse a pattern another template has: `matching` would always pick the first of the
    two by name, so the other would never apply, and nothing would say so."""
    for other in templates:
        if other.pattern == pattern and other.name != name:
            raise errors.TemplatePatternTaken(
                f"template {other.name!r} already has the pattern {pattern!r}, and of two"
                f" templates with one pattern only the first by name applies; change"
                f" {other.name!r} instead, or give {name!r} another pattern"
            )
