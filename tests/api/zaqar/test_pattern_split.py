"""`POST /v2/queues/{dlq}/patterns/{id}/split`: a stored pattern replaced by one pattern per
value its members hold at a variable position, each member placed by the value its error
holds there; refused, before anything is written, where there is nothing to split."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.zaqar.conftest import ApiClient, claim, post, with_dlq

PATTERNS = "/v2/queues/orders-dlq/patterns"
SPLIT = PATTERNS + "/p-mixed/split"


def rejected(api: ApiClient, *errors: str) -> list[str]:
    """Dead letters of "orders", each rejected by its consumer with `error`; their ids."""
    ids = post(api, "orders", *range(len(errors)))
    cid, _ = claim(api, "orders", limit=len(errors))
    for mid, error in zip(ids, errors, strict=True):
        href = f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={cid}"
        assert api.post(href, json={"error": error}).status_code == 200
    return ids


def stored(api: ApiClient) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in api.get(PATTERNS).json()["patterns"]}


@pytest.fixture
def mixed(api: ApiClient) -> list[str]:
    """A pattern whose first position holds two formats (and a member that left the DLQ)."""
    with_dlq(api, n=5)
    ids = rejected(
        api,
        "AnalysisException: cannot combine TimestampType and StringType",
        "AnalysisException: cannot combine TimestampType and LongType",
        "AnalysisException: cannot combine DateType and StringType",
        "AnalysisException: cannot combine TimestampType and StringType",
    )
    gone = ids[3]
    assert api.delete(f"/v2/queues/orders-dlq/messages/{gone}").status_code == 204
    pattern = {
        "id": "p-mixed",
        "template": "AnalysisException: cannot combine <*> and <*>",
        "signature": "AnalysisException",
        "count": 4,
        "message_ids": ids,
        "purity": 0.6,
        "impure": True,
        "variables": [
            {"variable": 1, "token": "<*>", "values": ["TimestampType", "DateType"],
             "counts": [3, 1], "distinct": 2},
            {"variable": 2, "token": "<*>", "values": ["StringType", "LongType"],
             "counts": [3, 1], "distinct": 2, "warning": "2 values that each recur"},
        ],
    }  # fmt: skip
    other = {"id": "p-other", "template": "timeout after <NUM> ms", "count": 0}
    assert api.put(PATTERNS, json={"patterns": [pattern, other]}).status_code == 204
    return ids


def test_a_pattern_splits_into_one_pattern_per_value_at_the_position(
    api: ApiClient, mixed: list[str]
) -> None:
    # When the mixed pattern is split at its first position
    r = api.post(SPLIT, json={"position": 1})
    assert r.status_code == 200, r.text
    done = r.json()
    # Then each format is a pattern of its own, its template holding the value
    templates = {p["template"]: p["count"] for p in done["patterns"]}
    assert templates == {
        "AnalysisException: cannot combine DateType and <*>": 1,
        "AnalysisException: cannot combine TimestampType and <*>": 2,
    }
    assert (done["pattern_id"], done["position"], done["unread"]) == ("p-mixed", 1, 1)
    got = stored(api)
    by_template = {p["template"]: p for p in got.values()}
    stamps = by_template["AnalysisException: cannot combine TimestampType and <*>"]
    assert stamps["message_ids"] == mixed[:2] and stamps["signature"] == "AnalysisException"
    assert stamps["split"]["from"] == "p-mixed" and stamps["split"]["value"] == "TimestampType"
    # its remaining position counts its own members' values, and keeps the old warning
    (rest,) = stamps["variables"]
    assert (rest["variable"], rest["values"], rest["counts"]) == (
        1, ["LongType", "StringType"], [1, 1]
    )  # fmt: skip
    assert rest["warning"] and stamps["impure"] is True
    # and its own purity: half its members in the largest value of the flagged position
    assert stamps["purity"] == 0.5
    # while the part of one member holds one value there: no warning, pure
    dates = by_template["AnalysisException: cannot combine DateType and <*>"]
    assert "warning" not in dates["variables"][0]
    assert (dates["purity"], dates["impure"]) == (1.0, False)
    assert stamps["reasons"] == ["rejected"] and stamps["source_queues"] == ["orders"]
    # The member no longer in the DLQ stays in the old pattern, which names its parts
    assert got["p-mixed"]["message_ids"] == [mixed[3]] and got["p-mixed"]["count"] == 1
    assert sorted(got["p-mixed"]["split_into"]) == sorted(p["id"] for p in done["patterns"])
    assert "p-other" in got
    # And a filter by the new pattern selects its dead letters
    dates = by_template["AnalysisException: cannot combine DateType and <*>"]["id"]
    listed = api.get(f"/v2/queues/orders-dlq/dead_letters?pattern_id={dates}").json()
    assert [m["id"] for m in listed["messages"]] == [mixed[2]]


def test_a_split_of_every_member_replaces_the_pattern(api: ApiClient) -> None:
    with_dlq(api, n=5)
    ids = rejected(api, "read failed", "write failed")
    pattern = {"id": "p-io", "template": "<*> failed", "message_ids": ids, "count": 2}
    assert api.put(PATTERNS, json={"patterns": [pattern]}).status_code == 204
    r = api.post(PATTERNS + "/p-io/split", json={"position": 1})
    assert r.status_code == 200, r.text
    got = stored(api)
    assert "p-io" not in got
    assert sorted(p["template"] for p in got.values()) == ["read failed", "write failed"]
    assert all(p["variables"] == [] and p["impure"] is False for p in got.values())


@pytest.mark.parametrize(
    ("path", "body", "status", "said"),
    [
        (SPLIT, {"position": 0}, 400, "from 1 to 4096"),
        (SPLIT, {"position": "1"}, 400, "from 1 to 4096"),
        (SPLIT, {"position": True}, 400, "from 1 to 4096"),
        (SPLIT, {}, 400, ""),
        (SPLIT, {"position": 1, "force": True}, 400, "force"),
        (SPLIT, {"position": 3}, 400, "1 to 2"),
        (SPLIT, {"position": 2}, 200, ""),  # the second position holds two values too
        (PATTERNS + "/p-nope/split", {"position": 1}, 404, "p-nope"),
        (PATTERNS + "/p-other/split", {"position": 1}, 409, "No member"),
        ("/v2/queues/nope/patterns/p-mixed/split", {"position": 1}, 404, "nope"),
    ],
)
def test_a_split_is_refused_where_there_is_nothing_to_split(
    api: ApiClient, mixed: list[str], path: str, body: dict[str, Any], status: int, said: str
) -> None:
    before = stored(api)
    r = api.post(path, json=body)
    assert r.status_code == status, r.text
    if status != 200:
        assert said in r.json()["description"]
        assert stored(api) == before  # nothing written


def test_a_position_every_member_agrees_on_is_nothing_to_split(api: ApiClient) -> None:
    with_dlq(api, n=5)
    ids = rejected(api, "read failed on disk", "read failed on disk")
    pattern = {"id": "p-one", "template": "<*> failed on <*>", "message_ids": ids}
    assert api.put(PATTERNS, json={"patterns": [pattern]}).status_code == 204
    r = api.post(PATTERNS + "/p-one/split", json={"position": 2})
    assert r.status_code == 409
    assert "holds 'disk' at position 2" in r.json()["description"]


def test_a_dry_run_says_what_a_split_would_make_and_writes_nothing(
    api: ApiClient, mixed: list[str]
) -> None:
    before = stored(api)
    r = api.post(SPLIT, json={"position": 1, "dry_run": True})
    assert r.status_code == 200, r.text
    preview = r.json()
    assert preview["dry_run"] is True and preview["unread"] == 1
    assert {(p["value"], p["count"]) for p in preview["patterns"]} == {
        ("TimestampType", 2),
        ("DateType", 1),
    }
    assert stored(api) == before
    # and the split itself makes those very patterns
    done = api.post(SPLIT, json={"position": 1}).json()
    assert done["patterns"] == preview["patterns"] and "dry_run" not in done
    assert api.post(SPLIT, json={"position": 1, "dry_run": "yes"}).status_code == 400
