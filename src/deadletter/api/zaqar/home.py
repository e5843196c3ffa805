"""Zaqar's unversioned and service endpoints: versions, the JSON home document, ping, health."""

from __future__ import annotations

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar.context import Ctx


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


def health(ctx: Ctx) -> Response:
    try:
        ctx.engine.list_queues(ctx.project, limit=1)
    except Exception as exc:
        return JSONResponse(
            {"storage_reachable": False, "error": type(exc).__name__}, status_code=503
        )
    return JSONResponse({"storage_reachable": True, "catalog_reachable": True})
