"""Where a dead letter goes: the dead-letter policy of one consumer group for one reason,
from the queue's policy, its routes by reason and its tags' own policies.

A consumer tag's own fields win over the queue's (a tag with its own DLQ sends every dead
letter it gives up there, as a Pub/Sub subscription's dead-letter topic takes all of its);
else a route for the reason names the DLQ (RabbitMQ's dead-letter routing keys); else the
queue's DLQ. Expiry and a bounded queue's drop-head end a message for every group, so they
are the queue's, never a tag's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import DeadLetterPolicy, GroupPolicy, RetryPolicy
from deadletter.domain.provenance import Reason


@dataclass(frozen=True)
class Target:
    """One DLQ that a queue's settings name, and what names it: the queue's policy
    (`kind` "dead_letter_queue"), the route of reason `key` ("route"), or the own policy of
    tag `key` ("tag")."""

    kind: str
    key: str | None
    name: str
    active: bool

    @property
    def what(self) -> str:
        """What names it, in words."""
        if self.kind == "route":
            return f"its route for {self.key!r}"
        if self.kind == "tag":
            return f"its tag {self.key!r}"
        return "its dead-letter queue"


def own_policy(s: QueueSettings, tag: str | None) -> GroupPolicy | None:
    return None if tag is None else s.tag_policies.get(tag)


def group_policy(s: QueueSettings, tag: str | None) -> DeadLetterPolicy | None:
    """The dead-letter policy of consumer group `tag` (None: the queue's untagged
    consumers): the tag's own max claims and DLQ over the queue's. None when either is
    missing from both."""
    policy = s.dead_letter
    own = own_policy(s, tag)
    if own is None or (own.max_claims is None and own.dead_letter_queue is None):
        return policy
    target = own.dead_letter_queue or (policy.target if policy else None)
    max_claims = own.max_claims or (policy.max_claims if policy else None)
    if target is None or max_claims is None:
        return None
    if own.dead_letter_queue is not None:
        active = own.active
    else:
        active = policy is not None and policy.active
    return DeadLetterPolicy(
        target=target,
        max_claims=max_claims,
        message_ttl=policy.message_ttl if policy else None,
        on_expiry=policy.on_expiry if policy else False,
        active=active,
    )


def policy_for(s: QueueSettings, tag: str | None, reason: Reason) -> DeadLetterPolicy | None:
    """The policy under which group `tag` dead-letters a message for `reason`, its target
    the DLQ the dead letter goes to; None or inactive: `reason` dead-letters nothing."""
    policy = group_policy(s, tag)
    if policy is None:
        return None
    own = own_policy(s, tag)
    if own is not None and own.dead_letter_queue is not None:
        return policy
    route = s.dead_letter_routes.get(reason.value)
    if route is None:
        return policy
    return replace(policy, target=route.target, active=policy.active and route.active)


def retry_for(s: QueueSettings, tag: str | None) -> RetryPolicy | None:
    """The retry backoff of group `tag`: its own, else the queue's."""
    own = own_policy(s, tag)
    if own is not None and own.retry_policy is not None:
        return own.retry_policy
    return s.retry_policy


def targets(s: QueueSettings) -> list[Target]:
    """Every DLQ the settings name: the policy's, each route's, each tag's own."""
    found = []
    if s.dead_letter is not None:
        policy = s.dead_letter
        found.append(Target("dead_letter_queue", None, policy.target, policy.active))
    for reason, route in sorted(s.dead_letter_routes.items()):
        found.append(Target("route", reason, route.target, route.active))
    for tag, own in sorted(s.tag_policies.items()):
        if own.dead_letter_queue is not None:
            found.append(Target("tag", tag, own.dead_letter_queue, own.active))
    return found


def active_targets(s: QueueSettings) -> set[str]:
    return {t.name for t in targets(s) if t.active}


def names(s: QueueSettings) -> set[str]:
    """Every DLQ the settings name, active or not."""
    return {t.name for t in targets(s)}


def first_target(s: QueueSettings) -> str | None:
    """What the store indexes a queue by: its DLQ, else another it names; None: none."""
    if s.dead_letter is not None:
        return s.dead_letter.target
    found = targets(s)
    return found[0].name if found else None


def activated(s: QueueSettings) -> QueueSettings:
    """`s` with every DLQ it names active: what settings that passed the checks store."""
    return s.with_changes(
        dead_letter=replace(s.dead_letter, active=True) if s.dead_letter else None,
        dead_letter_routes={k: replace(r, active=True) for k, r in s.dead_letter_routes.items()},
        tag_policies={k: replace(p, active=True) for k, p in s.tag_policies.items()},
    )


def without_target(s: QueueSettings, dlq: str) -> QueueSettings:
    """`s` once queue `dlq` is deleted: whatever names it turns inactive."""
    policy = s.dead_letter
    return s.with_changes(
        dead_letter=replace(policy, active=False)
        if policy is not None and policy.target == dlq
        else policy,
        dead_letter_routes={
            k: replace(r, active=False) if r.target == dlq else r
            for k, r in s.dead_letter_routes.items()
        },
        tag_policies={
            k: replace(p, active=False) if p.dead_letter_queue == dlq else p
            for k, p in s.tag_policies.items()
        },
    )
