"""A stand-in for the native API as its contract states it, for the data source's tests."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


class ContractStub:
    """The native API's dead-letter browsing, message posting and pattern storing, exactly as
    the contract states them, over an in-memory list; it records what it was asked. Every
    queue it is asked about exists and is a DLQ (`deadletter analyze --queue` looks first)."""

    def __init__(self, dead_letters: list[dict[str, Any]]) -> None:
        self.dead_letters = sorted(dead_letters, key=lambda m: m["provenance"]["dead_lettered_at"])
        self.browses: list[dict[str, str]] = []
        self.posts: list[tuple[str, list[dict[str, Any]]]] = []
        self.patterns: dict[str, list[dict[str, Any]]] = {}
        self.app = Starlette(
            routes=[
                Route("/v2/queues/{q}", self.queue, methods=["GET"]),
                Route("/v2/queues/{q}/dead_letters", self.browse, methods=["GET"]),
                Route("/v2/queues/{q}/dead_letter_sources", self.sources, methods=["GET"]),
                Route("/v2/queues/{q}/messages", self.post, methods=["POST"]),
                Route("/v2/queues/{q}/patterns", self.put_patterns, methods=["PUT"]),
            ]
        )

    async def queue(self, request: Request) -> Response:
        return JSONResponse({})

    async def sources(self, request: Request) -> Response:
        """The queues that name this one as their DLQ: those its dead letters came from."""
        names = sorted({m["provenance"]["source_queue"] for m in self.dead_letters})
        return JSONResponse(
            {
                "sources": [
                    {"name": n, "href": f"/v2/queues/{n}", "max_claim_count": 3, "active": True}
                    for n in names
                ]
            }
        )

    async def browse(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.browses.append(params)
        limit = int(params.get("limit", "100"))
        start = int(params.get("marker", "0"))

        def keep(m: dict[str, Any]) -> bool:
            p = m["provenance"]
            at = p["dead_lettered_at"]
            return (
                params.get("source_queue") in (None, p["source_queue"])
                and params.get("source_tag") in (None, p.get("source_tag"))
                and params.get("reason") in (None, p["reason"])
                and ("since" not in params or at >= params["since"])
                and ("until" not in params or at < params["until"])
            )

        rest = [m for i, m in enumerate(self.dead_letters) if i >= start and keep(m)]
        page = rest[:limit]
        links = []
        if len(page) == limit:
            nxt = self.dead_letters.index(page[-1]) + 1
            query = urlencode({**params, "marker": str(nxt)})
            links.append({"rel": "next", "href": f"{request.url.path}?{query}"})
        return JSONResponse({"messages": page, "links": links})

    async def post(self, request: Request) -> Response:
        body = await request.json()
        self.posts.append((request.path_params["q"], body["messages"]))
        return JSONResponse({"resources": []}, status_code=201)

    async def put_patterns(self, request: Request) -> Response:
        self.patterns[request.path_params["q"]] = (await request.json())["patterns"]
        return Response(status_code=204)


def as_api_message(record: dict[str, Any]) -> dict[str, Any]:
    """A corpus record in the API's message JSON for a dead letter."""
    return {
        "id": record["message_id"],
        "href": f"/v2/queues/dlq/messages/{record['message_id']}",
        "ttl": 3600,
        "age": 10,
        "body": record["body"],
        "attributes": record["attributes"],
        "claim_count": 0,
        "enqueued_at": record["enqueued_at"],
        "provenance": {
            "source_queue": record["source_queue"],
            "reason": record["reason"],
            "description": record["description"],
            "error": record["error"],
            **({"error_class": record["error_class"]} if record.get("error_class") else {}),
            "dead_lettered_at": record["dead_lettered_at"],
            "claim_count": record["claim_count"],
            "original_message_id": record["message_id"],
            "original_enqueued_at": record["enqueued_at"],
        },
    }
