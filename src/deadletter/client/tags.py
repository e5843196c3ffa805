"""The client's calls of consumer tags: create, read, change the policy of, delete. `Client`
inherits them; each goes through its `_json` or `_call`."""

from __future__ import annotations

from typing import Any

from deadletter.client.wire import seg


class TagCalls:
    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError  # the Client's

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError  # the Client's

    def create_tag(
        self,
        queue: str,
        name: str,
        start: float | str | None = None,
        filter_attribute: str | None = None,
        filter_value: str | None = None,
        *,
        policy: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """`policy`: the tag's own max_claims, dead_letter_queue and retry_policy."""
        body: dict[str, Any] = {} if start is None else {"start": start}
        body.update(policy or {})
        if filter_attribute is not None:
            body["filter"] = {"attribute": filter_attribute, "value": filter_value}
        doc: dict[str, Any] = self._json(
            "PUT", f"/v2/queues/{seg(queue)}/tags/{seg(name)}", json=body
        )
        return doc

    def update_tag(self, queue: str, name: str, policy: dict[str, Any]) -> dict[str, Any]:
        """Change the tag's own policy fields given (None: back to the queue's)."""
        doc: dict[str, Any] = self._json(
            "PATCH", f"/v2/queues/{seg(queue)}/tags/{seg(name)}", json=policy
        )
        return doc

    def tags(self, queue: str) -> list[dict[str, Any]]:
        return list(self._json("GET", f"/v2/queues/{seg(queue)}/tags")["tags"])

    def tag(self, queue: str, name: str) -> dict[str, Any]:
        doc: dict[str, Any] = self._json("GET", f"/v2/queues/{seg(queue)}/tags/{seg(name)}")
        return doc

    def delete_tag(self, queue: str, name: str) -> None:
        self._call("DELETE", f"/v2/queues/{seg(queue)}/tags/{seg(name)}")
