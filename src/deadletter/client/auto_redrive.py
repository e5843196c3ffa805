"""The client's calls of a DLQ's automatic redrive policy (docs/api.md, "Automatic redrive")."""

from __future__ import annotations

from typing import Any

from deadletter.client.wire import seg


class AutoRedriveCalls:
    """Part of `Client`, whose `_json` sends each call."""

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError

    def put_auto_redrive(self, dlq: str, policy: dict[str, Any]) -> dict[str, Any]:
        """Set the policy whole (made, or replaced)."""
        return dict(self._json("PUT", _path(dlq), json=policy))

    def auto_redrive(self, dlq: str) -> dict[str, Any]:
        return dict(self._json("GET", _path(dlq)))

    def stop_auto_redrive(self, dlq: str) -> dict[str, Any]:
        return dict(self._json("POST", _path(dlq) + "/stop"))

    def resume_auto_redrive(self, dlq: str) -> dict[str, Any]:
        return dict(self._json("POST", _path(dlq) + "/resume"))

    def delete_auto_redrive(self, dlq: str) -> None:
        self._json("DELETE", _path(dlq))


def _path(dlq: str) -> str:
    return f"/v2/queues/{seg(dlq)}/dead_letters/auto_redrive"
