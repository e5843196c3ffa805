"""Every `/v2/...` path answers 404 and 405 in Zaqar's JSON; other paths answer in SQS's."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.api.zaqar.conftest import ApiClient, claim, post
from tests.hardening.conftest import refused


@pytest.mark.parametrize(
    ("method", "url", "allow"),
    [
        ("POST", "/v2/ping", "GET, HEAD"),
        ("POST", "/v2/queues", "GET, HEAD"),
        ("POST", "/v2", "GET, HEAD"),
        ("PUT", "/v2/queues/keep/messages", "DELETE, GET, HEAD, POST"),
    ],
)
def test_a_wrong_method_under_v2_is_a_zaqar_405(
    api: ApiClient, untouched: Callable[[], None], method: str, url: str, allow: str
) -> None:
    r = api.request(method, url, json={})
    refused(r, 405, f"{method} is not allowed")
    assert r.json()["title"] == "Method not allowed"
    assert set(r.headers["Allow"].split(", ")) == set(allow.split(", "))
    untouched()


@pytest.mark.parametrize("url", ["/v2/nothing", "/v2/queues/keep/nothing", "/v2/queues/a/b/c/d"])
def test_an_unknown_path_under_v2_is_a_zaqar_404(
    api: ApiClient, untouched: Callable[[], None], url: str
) -> None:
    refused(api.post(url, json={}), 404, "There is no resource")
    refused(api.get(url), 404, "There is no resource")
    untouched()


def test_other_paths_answer_in_the_sqs_format(api: ApiClient) -> None:
    r = api.get("/nowhere")
    assert r.status_code == 404
    assert "<Code>AWS.SimpleQueueService.UnsupportedOperation</Code>" in r.text
    # The request id is in the header as in the body, as on every SQS answer
    assert f"<RequestId>{r.headers['x-amzn-RequestId']}</RequestId>" in r.text
    r = api.put("/", headers={"X-Amz-Target": "AmazonSQS.ListQueues"})
    assert r.status_code == 405
    assert r.json()["__type"] == "com.amazonaws.sqs#UnsupportedOperation"
    assert r.headers["x-amzn-RequestId"]


def test_a_dead_letter_batch_listing_one_message_thrice_moves_and_counts_it_once(
    api: ApiClient, untouched: Callable[[], None]
) -> None:
    ids = post(api, "orders", "twice")
    claim_id, _ = claim(api, "orders")
    before = api.get("/v2/queues/orders/stats").json()["dead_letter"]["dead_lettered"]
    pair = {"id": ids[0], "claim_id": claim_id}
    r = api.post("/v2/queues/orders/dead_letter", json={"messages": [pair, pair, pair]})
    assert r.status_code == 200, r.text
    assert [m["id"] for m in r.json()["messages"]] == ids
    after = api.get("/v2/queues/orders/stats").json()["dead_letter"]["dead_lettered"]
    assert after["rejected"] == before["rejected"] + 1
    metrics = api.get("/metrics").text
    line = next(
        x
        for x in metrics.splitlines()
        if x.startswith("deadletter_messages_dead_lettered_total{") and 'source="orders"' in x
    )
    assert float(line.rsplit(" ", 1)[1]) == 2.0  # the bystander's dead letter, and this one
    assert api.get("/v2/queues/orders-dlq/stats").json()["messages"]["total"] == 2
