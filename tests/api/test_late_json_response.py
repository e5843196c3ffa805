"""A message route's answer shaped as it is sent: on PostgreSQL the handler returns inside its
group's turn, and the answer's shaping must not hold the turn (`LateJSONResponse`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from deadletter.api.json_response import LateJSONResponse


def _sent(response: LateJSONResponse) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    asyncio.run(response({"type": "http", "method": "POST"}, receive, send))
    return messages


def test_the_answer_is_shaped_when_sent_not_when_made() -> None:
    shaped: list[str] = []

    def content() -> dict[str, Any]:
        shaped.append("now")
        return {"messages": [{"body": "ü"}]}

    # Given an answer made by a handler
    response = LateJSONResponse(content, status_code=201, headers={"Location": "/v2/q"})
    # I expect nothing shaped until it is sent,
    assert shaped == []
    start, body = _sent(response)
    # then the JSON of the content, with its status, its headers and its length.
    assert shaped == ["now"]
    assert start["status"] == 201
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    assert headers["location"] == "/v2/q"
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body["body"])
    assert json.loads(body["body"]) == {"messages": [{"body": "ü"}]}
