"""The statements of subscriptions and of the notifications owed to them (migration 0010)."""

from __future__ import annotations

from deadletter.storage.sql.queries import _insert

SUBSCRIPTION_FIELDS = (
    "id", "project", "queue", "subscriber", "ttl", "options", "confirmed", "created_at",
    "expires_at",
)  # fmt: skip
DELIVERY_FIELDS = (
    "id", "project", "queue", "subscription_id", "subscriber", "options", "message_id", "body",
    "ttl", "enqueued_at", "due_at", "attempts", "last_error",
)  # fmt: skip
INSERT_SUBSCRIPTION = _insert("subscriptions", SUBSCRIPTION_FIELDS)
GET_SUBSCRIPTION = (
    "SELECT * FROM subscriptions WHERE project = :project AND queue = :queue AND id = :id"
)
GET_SUBSCRIPTION_LOCKED = GET_SUBSCRIPTION + " FOR UPDATE"
SUBSCRIPTION_BY_SUBSCRIBER = (
    "SELECT * FROM subscriptions"
    " WHERE project = :project AND queue = :queue AND subscriber = :subscriber"
)
# Live ones only; paged by id, as Zaqar pages by its ids.
LIST_SUBSCRIPTIONS = (
    "SELECT * FROM subscriptions WHERE project = :project AND queue = :queue"
    " AND expires_at > :now AND id > :after ORDER BY id LIMIT :limit"
)
LIVE_SUBSCRIPTIONS = (
    "SELECT * FROM subscriptions WHERE project = :project AND queue = :queue"
    " AND expires_at > :now ORDER BY id"
)
UPDATE_SUBSCRIPTION = (
    "UPDATE subscriptions SET subscriber = :subscriber, ttl = :ttl, options = :options,"
    " confirmed = :confirmed, expires_at = :expires_at WHERE id = :id"
)
DELETE_SUBSCRIPTION = (
    "DELETE FROM subscriptions WHERE project = :project AND queue = :queue AND id = :id"
)
DELETE_EXPIRED_SUBSCRIPTIONS = (
    "DELETE FROM subscriptions WHERE expires_at <= :now RETURNING project, queue"
)
# How many subscriptions a queue has (migration 0012), so that a send reads it with the queue.
ADD_SUBSCRIPTIONS = (
    "UPDATE queues SET subscriptions = subscriptions + :n"
    " WHERE project = :project AND name = :queue"
)
COUNT_SUBSCRIPTIONS = (
    "SELECT coalesce(sum(subscriptions), 0) AS project_n,"
    " coalesce(sum(CASE WHEN name = :queue THEN subscriptions ELSE 0 END), 0) AS queue_n"
    " FROM queues WHERE project = :project"
)
# Deleting a subscription (or purging a queue's) cancels what is still owed to it.
CANCEL_DELIVERIES = "DELETE FROM deliveries WHERE subscription_id = ANY(:ids)"
DELETE_QUEUE_SUBSCRIPTIONS = (
    "DELETE FROM deliveries WHERE project = :project AND queue = :name",
    "DELETE FROM subscriptions WHERE project = :project AND queue = :name",
)
SUBSCRIPTION_TABLES = ("deliveries", "subscriptions")
INSERT_DELIVERY = _insert("deliveries", DELIVERY_FIELDS)
# Due notifications, oldest first, leaving out the subscriptions that already have as many in
# flight in this process as they may (so one slow subscriber cannot take every slot).
DUE_DELIVERIES = (
    "SELECT * FROM deliveries WHERE due_at <= :now"
    " AND (NOT (subscription_id = ANY(:busy)) OR :busy IS NULL)"
    " ORDER BY due_at, id LIMIT :limit FOR UPDATE SKIP LOCKED"
)
# One project's due notifications (its rows found by deliveries_queue, project first).
DUE_DELIVERIES_OF = (
    "SELECT * FROM deliveries WHERE project = :project AND due_at <= :now"
    " AND (NOT (subscription_id = ANY(:busy)) OR :busy IS NULL)"
    " ORDER BY due_at, id LIMIT :limit FOR UPDATE SKIP LOCKED"
)
# The projects owed any notification, one index probe each (a loose scan of deliveries_queue).
DELIVERY_PROJECTS = (
    "WITH RECURSIVE owed(project) AS ("
    " SELECT min(project) FROM deliveries"
    " UNION ALL"
    " SELECT (SELECT min(project) FROM deliveries WHERE project > owed.project)"
    " FROM owed WHERE owed.project IS NOT NULL"
    ") SELECT project FROM owed WHERE project IS NOT NULL"
)
# Leases a taken notification (`due_at` moves past the time a POST can take) and records an
# attempt's failure (`due_at` is then the retry's time).
UPDATE_DELIVERY = (
    "UPDATE deliveries SET due_at = :due_at, attempts = :attempts, last_error = :last_error"
    " WHERE id = :id"
)
GET_DELIVERY_LOCKED = "SELECT * FROM deliveries WHERE id = :id FOR UPDATE"
DELETE_DELIVERY = "DELETE FROM deliveries WHERE id = :id"
PENDING_DELIVERIES = (
    "SELECT * FROM deliveries WHERE project = :project AND queue = :queue ORDER BY due_at, id"
)
