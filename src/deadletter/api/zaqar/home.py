"""Zaqar's unversioned and service endpoints: versions, the JSON home document, ping, health."""

from __future__ import annotations

import time

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar.context import Ctx
from deadletter.domain.errors import StoreUnavailable


def versions(ctx: Ctx) -> Response:
    return JSONResponse(
        {
            "versions": [
                {
                    "id": "2",
                    "status": "CURRENT",
                    "updated": "2014-9-24T04:06:47Z",
                    "media-types": [
                        {
                            "base": "application/json",
                            "type": "application/vnd.openstack.messaging-v2+json",
                        }
                    ],
                    "links": [{"href": "/v2/", "rel": "self"}],
                }
            ]
        },
        status_code=300,
    )


def home(ctx: Ctx) -> Response:
    resources = {
        "rel/queues": "/v2/queues{?marker,limit,detailed,with_count}",
        "rel/queue": "/v2/queues/{queue_name}",
        "rel/queue_stats": "/v2/queues/{queue_name}/stats",
        "rel/messages": "/v2/queues/{queue_name}/messages{?marker,limit,echo,include_claimed}",
        "rel/post_messages": "/v2/queues/{queue_name}/messages",
        "rel/claim": "/v2/queues/{queue_name}/claims{?limit}",
        "rel/dead_letters": "/v2/queues/{queue_name}/dead_letters{?source_queue,reason,since,"
        "until,marker,limit}",
        "rel/dead_letter_sources": "/v2/queues/{queue_name}/dead_letter_sources",
        "rel/redrives": "/v2/queues/{queue_name}/redrives",
        "rel/patterns": "/v2/queues/{queue_name}/patterns",
        "rel/ping": "/v2/ping",
        "rel/health": "/v2/health",
    }
    return JSONResponse(
        {
            "resources": {
                name: {"href-template": href} if "{" in href else {"href": href}
                for name, href in resources.items()
            }
        },
        media_type="application/json-home",
    )


def ping(ctx: Ctx) -> Response:
    return Response(status_code=204)


RETRY = {"Retry-After": str(StoreUnavailable.retry_after)}


def health(ctx: Ctx) -> Response:
    """`status` is `ok` (200); `degraded` (503) while reads answer but the store refuses
    writes (a full disk), or `unavailable` (503) while it answers nothing, with the `reason`
    and the time it began (`since`). Zaqar's own keys, `storage_reachable` and
    `catalog_reachable`, say whether a read answered."""
    try:
        ctx.engine.list_queues(ctx.project, limit=1)
    except Exception as exc:
        body: dict[str, object] = {
            "status": "unavailable",
            "storage_reachable": False,
            "error": type(exc).__name__,
        }
        outage = ctx.engine.store_outage()
        if isinstance(exc, StoreUnavailable) and outage is not None:
            body |= {"reason": outage.reason, "since": _timestamp(outage.since)}
        return JSONResponse(body, status_code=503, headers=RETRY)
    up = {"storage_reachable": True, "catalog_reachable": True}
    outage = ctx.engine.store_outage()
    if outage is not None:
        return JSONResponse(
            {
                "status": "degraded",
                **up,
                "reason": outage.reason,
                "since": _timestamp(outage.since),
            },
            status_code=503,
            headers=RETRY,
        )
    return JSONResponse({"status": "ok", **up})


def _timestamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
