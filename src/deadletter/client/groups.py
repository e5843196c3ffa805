"""The client's calls of failure groups: filters saved on a DLQ, archive and restore, discard
and the discard log. `Client` inherits them; each goes through its `_json`."""

from __future__ import annotations

from typing import Any

from deadletter.client.wire import seg


class FailureGroupCalls:
    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError  # the Client's

    def saved_filters(self, dlq: str) -> list[dict[str, Any]]:
        return list(self._json("GET", f"/v2/queues/{seg(dlq)}/dead_letters/filters")["filters"])

    def saved_filter(self, dlq: str, name: str) -> dict[str, Any]:
        doc: dict[str, Any] = self._json(
            "GET", f"/v2/queues/{seg(dlq)}/dead_letters/filters/{seg(name)}"
        )
        return doc

    def save_filter(self, dlq: str, name: str, **fields: Any) -> dict[str, Any]:
        """Save the filter of `fields` (the API's filter names) on `dlq` as `name`."""
        doc: dict[str, Any] = self._json(
            "PUT", f"/v2/queues/{seg(dlq)}/dead_letters/filters/{seg(name)}", json=fields
        )
        return doc

    def delete_filter(self, dlq: str, name: str) -> None:
        self._json("DELETE", f"/v2/queues/{seg(dlq)}/dead_letters/filters/{seg(name)}")

    def archive(
        self, dlq: str, *, retention: int | None = None, dry_run: bool = False, **where: Any
    ) -> int:
        """Archive what `where` selects, for `retention` seconds; how many (would be)."""
        body = {**where, **({"retention": retention} if retention is not None else {})}
        doc = self._json("POST", f"/v2/queues/{seg(dlq)}/dead_letters/archive",
                         json={**body, **({"dry_run": True} if dry_run else {})})  # fmt: skip
        return int(doc["to_archive" if dry_run else "archived"])

    def restore(self, dlq: str, *, dry_run: bool = False, **where: Any) -> int:
        doc = self._json("POST", f"/v2/queues/{seg(dlq)}/dead_letters/restore",
                         json={**where, **({"dry_run": True} if dry_run else {})})  # fmt: skip
        return int(doc["to_restore" if dry_run else "restored"])

    def discard(self, dlq: str, *, why: str, dry_run: bool = False, **where: Any) -> dict[str, Any]:
        """Discard what `where` selects, saying `why`: the answer (`discarded` and the
        `record`, or with `dry_run`, `to_discard`)."""
        doc: dict[str, Any] = self._json(
            "POST",
            f"/v2/queues/{seg(dlq)}/dead_letters/discard",
            json={**where, "why": why, **({"dry_run": True} if dry_run else {})},
        )
        return doc

    def discards(self, dlq: str, limit: int = 100) -> list[dict[str, Any]]:
        """The discard log, newest first."""
        doc = self._json(
            "GET", f"/v2/queues/{seg(dlq)}/dead_letters/discards", params={"limit": limit}
        )
        return list(doc["discards"])
