"""An optional field of no documented null is refused as `null`, never read as left out: an
archive's `retention`, a redrive's and an automatic redrive's `canary` (and the canary's
`watch`, `max_redeath`, `seed`, `force`), an automatic redrive's `enabled`. Each `null` is a
400 naming the field before anything is written; left out, each still takes its default."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from deadletter.api.zaqar.routes import ROUTES
from tests.api.zaqar.conftest import ApiClient, claim, post, with_dlq

DLQ = "/v2/queues/orders-dlq"
PATHS = {r.name: r.path.replace("{queue}", "orders-dlq") for r in ROUTES}
POLICY = {"filter": {}, "interval": 600, "max_rounds": 2}
# Each route with the body it takes, and the optional fields whose null means nothing.
CANARY = ("canary", "watch", "max_redeath", "seed", "force")
TABLE: list[tuple[str, str, dict[str, Any], tuple[str, ...]]] = [
    ("POST", "archive_dead_letters", {"source_queue": "orders"}, ("retention",)),
    ("POST", "start_redrive", {"source_queue": "orders"}, CANARY),
    ("PUT", "put_auto_redrive", POLICY, (*CANARY, "enabled")),
]
CASES = [(m, name, body, field) for m, name, body, fields in TABLE for field in fields]


@pytest.fixture
def two_dead_letters(api: ApiClient) -> Iterator[None]:
    """Given orders-dlq holding two dead letters of orders."""
    with_dlq(api)
    for n in (1, 2):
        (mid,) = post(api, "orders", {"n": n})
        cid, _ = claim(api, "orders", limit=1)
        r = api.post(f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={cid}", json={})
        assert r.status_code == 200, r.text
    yield


@pytest.mark.parametrize(("method", "name", "body", "field"), CASES,
                         ids=[f"{c[1]}.{c[3]}" for c in CASES])  # fmt: skip
def test_a_null_optional_field_is_refused_naming_it(
    api: ApiClient,
    two_dead_letters: None,
    counted: list[str],
    method: str,
    name: str,
    body: dict[str, Any],
    field: str,
) -> None:
    # alone, and beside a canary where the field goes with one
    bodies = [{**body, field: None}]
    if field in CANARY[1:]:
        bodies.append({**body, "canary": 1, field: None})
    for sent in bodies:
        counted.clear()
        r = api.request(method, PATHS[name], json=sent)
        assert r.status_code == 400, (sent, r.text)
        assert field in r.json()["description"], r.text
        assert "write" not in counted, sent
    # and nothing was archived, moved or set
    assert api.get(f"{DLQ}/dead_letters/count").json() == {"count": 2}
    assert api.get(f"{DLQ}/redrives").json()["redrives"] == []
    assert api.get(PATHS["get_auto_redrive"]).status_code == 404


def test_left_out_each_takes_its_default(api: ApiClient, two_dead_letters: None) -> None:
    r = api.put(PATHS["put_auto_redrive"], json=POLICY)
    assert r.status_code == 201 and r.json()["state"] == "active", r.text
    assert r.json()["canary"] is None
    r = api.post(PATHS["archive_dead_letters"], json={"source_queue": "orders"})
    assert r.json() == {"archived": 2}, r.text
