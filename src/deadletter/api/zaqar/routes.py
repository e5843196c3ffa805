"""The Zaqar face's route table (path, method, handler, needs Client-ID) as Starlette routes."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from deadletter.api.hot import HOT
from deadletter.api.options import AppOptions
from deadletter.api.zaqar.claims import create_claim, get_claim, release_claim, renew_claim
from deadletter.api.zaqar.context import Handler, endpoint
from deadletter.api.zaqar.dead_letters import (
    cancel_redrive,
    count_dead_letters,
    dead_letter_batch,
    dead_letter_message,
    dead_letter_sources,
    edit_dead_letter,
    get_patterns,
    get_redrive,
    list_dead_letters,
    list_redrives,
    merge_assignments,
    purge_dead_letters,
    put_patterns,
    release_message,
    resume_redrive,
    start_redrive,
)
from deadletter.api.zaqar.home import health, home, ping, versions
from deadletter.api.zaqar.messages import (
    delete_message,
    delete_messages,
    get_message,
    list_messages,
    post_messages,
)
from deadletter.api.zaqar.queues import (
    create_queue,
    delete_queue,
    get_queue,
    list_queues,
    patch_queue,
    purge_queue,
    queue_stats,
)
from deadletter.api.zaqar.reads import READS
from deadletter.api.zaqar.subscriptions import (
    confirm_subscription,
    create_subscription,
    delete_subscription,
    get_subscription,
    list_subscriptions,
    update_subscription,
)
from deadletter.api.zaqar.tags import create_tag, delete_tag, get_tag, list_tags
from deadletter.api.zaqar.templates import (
    delete_template,
    get_template,
    list_templates,
    patch_template,
    put_template,
)
from deadletter.engine import Engine

# (path, method, handler, needs Client-ID); openapi.py documents each from this table, and
# what each handler reads from a request is declared in `reads.READS`.
Q = "/v2/queues/{queue}"
M = Q + "/messages/{message_id}"
ROUTES: list[tuple[str, str, Handler, bool]] = [
    ("/", "GET", versions, False),
    ("/v2", "GET", home, False),
    ("/v2/", "GET", home, False),
    ("/v2/ping", "GET", ping, False),
    ("/v2/health", "GET", health, False),
    ("/v2/queues", "GET", list_queues, True),
    (Q, "PUT", create_queue, True),
    (Q, "GET", get_queue, True),
    (Q, "PATCH", patch_queue, True),
    (Q, "DELETE", delete_queue, True),
    (Q + "/stats", "GET", queue_stats, True),
    (Q + "/purge", "POST", purge_queue, True),
    (Q + "/messages", "POST", post_messages, True),
    (Q + "/messages", "GET", list_messages, True),
    (Q + "/messages", "DELETE", delete_messages, True),
    (M, "GET", get_message, True),
    (M, "DELETE", delete_message, True),
    (M + "/dead_letter", "POST", dead_letter_message, True),
    (M + "/release", "POST", release_message, True),
    (Q + "/claims", "POST", create_claim, True),
    (Q + "/claims/{claim_id}", "GET", get_claim, True),
    (Q + "/claims/{claim_id}", "PATCH", renew_claim, True),
    (Q + "/claims/{claim_id}", "DELETE", release_claim, True),
    (Q + "/dead_letter", "POST", dead_letter_batch, True),
    (Q + "/dead_letters", "GET", list_dead_letters, True),
    (Q + "/dead_letters/count", "GET", count_dead_letters, True),
    (Q + "/dead_letters", "DELETE", purge_dead_letters, True),
    (Q + "/dead_letters/{message_id}", "PATCH", edit_dead_letter, True),
    (Q + "/dead_letter_sources", "GET", dead_letter_sources, True),
    (Q + "/redrives", "POST", start_redrive, True),
    (Q + "/redrives", "GET", list_redrives, True),
    (Q + "/redrives/{task_id}", "GET", get_redrive, True),
    (Q + "/redrives/{task_id}", "DELETE", cancel_redrive, True),
    (Q + "/redrives/{task_id}/resume", "POST", resume_redrive, True),
    (Q + "/patterns", "PUT", put_patterns, True),
    (Q + "/patterns", "GET", get_patterns, True),
    (Q + "/patterns/assignments", "POST", merge_assignments, True),
    ("/v2/templates", "GET", list_templates, True),
    ("/v2/templates/{template}", "PUT", put_template, True),
    ("/v2/templates/{template}", "GET", get_template, True),
    ("/v2/templates/{template}", "PATCH", patch_template, True),
    ("/v2/templates/{template}", "DELETE", delete_template, True),
    (Q + "/subscriptions", "POST", create_subscription, True),
    (Q + "/subscriptions", "GET", list_subscriptions, True),
    (Q + "/subscriptions/{subscription_id}", "GET", get_subscription, True),
    (Q + "/subscriptions/{subscription_id}", "PATCH", update_subscription, True),
    (Q + "/subscriptions/{subscription_id}", "DELETE", delete_subscription, True),
    (Q + "/subscriptions/{subscription_id}/confirm", "PUT", confirm_subscription, True),
    (Q + "/tags", "GET", list_tags, True),
    (Q + "/tags/{tag}", "PUT", create_tag, True),
    (Q + "/tags/{tag}", "GET", get_tag, True),
    (Q + "/tags/{tag}", "DELETE", delete_tag, True),
]


def zaqar_routes(engine: Engine, options: AppOptions) -> list[BaseRoute]:
    return [
        Route(
            path,
            endpoint(
                engine,
                options,
                handler,
                client_id,
                path,
                bounded=(method, path) in HOT,
                reads=READS[handler.__name__],
            ),
            methods=[method],
        )
        for path, method, handler, client_id in ROUTES
    ]
