"""A labelled corpus of realistic dead letters, deterministic by seed, for tests and benchmarks.

Each record has the export format's fields plus `label`, the bug that killed it. Bugs span
five services: a field missing after a producer schema change, downstream timeouts with
varying durations and hosts, JSON decode errors at varying offsets, validation failures with
varying values, the same exception reached through different code paths, and so on.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 11, 20, tzinfo=UTC)
WINDOW_HOURS = 48
TENANTS = [f"tenant-{i:02d}" for i in range(20)]
OLD_VERSIONS = ["2.3.0", "2.3.1", "2.3.2", "2.3.4"]

Gen = Callable[[random.Random], tuple[str, str, Any]]  # (description, error, body)


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _order(rng: random.Random, with_customer: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "order_id": f"ord-{rng.randint(10000, 99999)}",
        "items": [
            {"sku": f"SKU-{rng.randint(100, 999)}", "qty": rng.randint(1, 5)}
            for _ in range(rng.randint(1, 3))
        ],
        "total": round(rng.uniform(5, 500), 2),
    }
    if with_customer:
        body["customer"] = {"id": f"c-{rng.randint(1000, 9999)}", "tier": rng.choice("abc")}
    else:
        body["buyer"] = {"ref": f"b-{rng.randint(1000, 9999)}"}
    return body


def _py_trace(frames: list[tuple[str, str, str]], rng: random.Random, last: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, func, code in frames:
        lines.append(f'  File "{path}", line {rng.randint(20, 400)}, in {func}')
        lines.append(f"    {code}")
    lines.append(last)
    return "\n".join(lines)


def _java_trace(head: str, frames: list[str], rng: random.Random) -> str:
    lines = [head]
    for frame in frames:
        cls = frame.rsplit(".", 1)[0].rsplit(".", 1)[-1]
        lines.append(f"\tat {frame}({cls}.java:{rng.randint(20, 400)})")
    lines.append(
        "\tat java.base/java.util.concurrent.ThreadPoolExecutor.runWorker"
        f"(ThreadPoolExecutor.java:{rng.randint(1100, 1200)})"
    )
    return "\n".join(lines)


def customer_missing(rng: random.Random) -> tuple[str, str, Any]:
    err = _py_trace(
        [
            ("/app/orders/worker.py", "handle", "total = price_order(order)"),
            ("/app/orders/pricing.py", "price_order", 'customer_id = order["customer"]["id"]'),
        ],
        rng,
        "KeyError: 'customer'",
    )
    return "handler raised", err, _order(rng, with_customer=False)


def inventory_timeout(rng: random.Random) -> tuple[str, str, Any]:
    host = f"inventory-{rng.randint(0, 7)}.svc.cluster.local:8080"
    sku = f"SKU-{rng.randint(100, 999)}"
    wait = rng.choice([f"{rng.randint(3000, 9000)}ms", f"{rng.uniform(3, 9):.1f}s"])
    err = f"httpx.ReadTimeout: GET http://{host}/v1/stock/{sku} timed out after {wait}"
    return "downstream call failed", err, _order(rng)


def order_expired(rng: random.Random) -> tuple[str, str, Any]:
    return "message expired before it was processed", "", _order(rng)


def json_decode(rng: random.Random) -> tuple[str, str, Any]:
    col = rng.randint(10, 900)
    char = rng.choice(["','", "':'", "'}'"])
    err = _py_trace(
        [
            ("/app/payments/consumer.py", "on_message", "payload = json.loads(raw)"),
            (
                "/usr/lib/python3.11/json/decoder.py",
                "raw_decode",
                "obj, end = self.scan_once(s, idx)",
            ),
        ],
        rng,
        f"json.decoder.JSONDecodeError: Expecting {char} delimiter: line 1 column {col} "
        f"(char {col - 1})",
    )
    body = '{"payment_id": "pay-' + str(rng.randint(1000, 9999)) + '", "amount": 1' + "x" * 3
    return "could not parse payload", err, body


def _payment(rng: random.Random, currency: str, amount: float) -> dict[str, Any]:
    return {
        "payment_id": f"pay-{rng.randint(10000, 99999)}",
        "order_id": f"ord-{rng.randint(10000, 99999)}",
        "amount": amount,
        "currency": currency,
        "card": {"last4": f"{rng.randint(0, 9999):04d}"},
    }


def amount_below_min(rng: random.Random) -> tuple[str, str, Any]:
    currency = rng.choice(["EUR", "USD", "GBP", "CHF"])
    amount = -round(rng.uniform(0.01, 99), 2)
    err = (
        f"ValidationError: amount {amount} is below the minimum 0.01 for currency {currency} "
        f"(order ord-{rng.randint(10000, 99999)})"
    )
    return "rejected by validation", err, _payment(rng, currency, amount)


def card_declined(rng: random.Random) -> tuple[str, str, Any]:
    code = rng.choice(["do_not_honor", "insufficient_funds", "expired_card", "stolen_card"])
    err = (
        f"CardDeclined: issuer declined card ending {rng.randint(0, 9999):04d} with {code} "
        f"request {_hex(rng, 16)}"
    )
    return "payment provider refused", err, _payment(rng, "EUR", round(rng.uniform(1, 99), 2))


def _shipment(rng: random.Random, line1: bool = True) -> dict[str, Any]:
    address: dict[str, Any] = {"city": rng.choice(["Lyon", "Porto", "Graz"]), "zip": "12345"}
    if line1:
        address["line1"] = f"{rng.randint(1, 200)} Main Street"
    return {
        "shipment_id": f"shp-{rng.randint(10000, 99999)}",
        "address": address,
        "parcels": [{"weight": round(rng.uniform(0.1, 40), 1)}],
    }


_NPE = 'java.lang.NullPointerException: Cannot invoke "String.length()" because "<local4>" is null'


def npe_label(rng: random.Random) -> tuple[str, str, Any]:
    frames = [
        "com.acme.shipping.label.LabelRenderer.render",
        "com.acme.shipping.label.LabelService.create",
        f"com.acme.shipping.Worker.lambda$handle${rng.randint(0, 3)}",
    ]
    return "handler raised", _java_trace(_NPE, frames, rng), _shipment(rng, line1=False)


def npe_customs(rng: random.Random) -> tuple[str, str, Any]:
    frames = [
        "com.acme.shipping.customs.CustomsFormBuilder.describe",
        "com.acme.shipping.customs.CustomsService.declare",
        f"com.acme.shipping.Worker.lambda$handle${rng.randint(0, 3)}",
    ]
    return "handler raised", _java_trace(_NPE, frames, rng), _shipment(rng)


def carrier_rejected(rng: random.Random) -> tuple[str, str, Any]:
    carrier = rng.choice(["DHL", "UPS", "GLS"])
    weight = round(rng.uniform(30.1, 60), 1)
    head = (
        f"java.lang.IllegalStateException: carrier {carrier} rejected parcel "
        f"PCL-{rng.randint(10000, 99999)}: weight {weight}kg exceeds the limit"
    )
    frames = [
        "com.acme.shipping.carrier.CarrierClient.book",
        "com.acme.shipping.carrier.BookingService.book",
        "com.acme.shipping.Worker.handle",
    ]
    return "handler raised", _java_trace(head, frames, rng), _shipment(rng)


def _notification(rng: random.Random) -> dict[str, Any]:
    return {
        "to": f"user{rng.randint(1, 9999)}@example.org",
        "template": rng.choice(["welcome", "receipt", "reset"]),
        "vars": {"name": rng.choice(["Ana", "Bo", "Cy"])},
    }


def smtp_refused(rng: random.Random) -> tuple[str, str, Any]:
    who = f"{rng.choice(['jane', 'li', 'omar'])}.{rng.randint(1, 99)}@example.org"
    err = f"smtplib.SMTPRecipientsRefused: 550 5.1.1 mailbox unavailable for {who}"
    return "delivery failed", err, _notification(rng)


def rate_limited(rng: random.Random) -> tuple[str, str, Any]:
    provider = rng.choice(["twilio", "sendgrid", "vonage"])
    err = (
        f"ProviderThrottled: provider {provider} throttled the request, retry after "
        f"{rng.randint(5, 120)}s (request id {uuid.UUID(int=rng.getrandbits(128))})"
    )
    return "delivery failed", err, _notification(rng)


def deadlock(rng: random.Random) -> tuple[str, str, Any]:
    err = _py_trace(
        [
            ("/app/inventory/consumer.py", "apply", "repo.adjust(event)"),
            ("/app/inventory/repo.py", "adjust", "cur.execute(UPDATE_STOCK, params)"),
            (
                "/usr/lib/python3.11/site-packages/psycopg/cursor.py",
                "execute",
                "raise ex.with_traceback(None)",
            ),
        ],
        rng,
        "psycopg.errors.DeadlockDetected: deadlock detected",
    ) + (
        f"\nDETAIL:  Process {rng.randint(1000, 9999)} waits for ShareLock on transaction "
        f"{rng.randint(10**5, 10**6)}; blocked by process {rng.randint(1000, 9999)}."
    )
    body = {"sku": f"SKU-{rng.randint(100, 999)}", "warehouse": "WH-1", "delta": -1}
    return "handler raised", err, body


def unknown_sku(rng: random.Random) -> tuple[str, str, Any]:
    sku = f"{rng.choice(['AB', 'QX', 'ZZ'])}-{rng.randint(10, 99)}{rng.choice('XYZ')}"
    err = (
        f"UnknownProduct: invalid sku '{sku}' for warehouse WH-{rng.randint(1, 9)}: "
        "no such product in the catalogue"
    )
    body = {"sku": sku, "warehouse": f"WH-{rng.randint(1, 9)}", "delta": rng.randint(-5, 5)}
    return "rejected by validation", err, body


def template_missing(rng: random.Random) -> tuple[str, str, Any]:
    name = rng.choice(["welcome", "receipt", "reset", "invoice", "reminder", "survey"])
    locale = rng.choice(["en_GB", "fr_FR", "de_DE", "pt_PT", "es_ES"])
    err = f"TemplateNotFound: template {name} not found for locale {locale}"
    return "rendering failed", err, _notification(rng)


def reservation_conflict(rng: random.Random) -> tuple[str, str, Any]:
    # The variable word comes first: template miners that bucket by leading tokens split it.
    warehouse = rng.choice(["north", "south", "east"])
    err = (
        f"{warehouse} warehouse: reservation conflict on SKU-{rng.randint(100, 999)} held by "
        f"order ord-{rng.randint(10000, 99999)}"
    )
    body = {"sku": f"SKU-{rng.randint(100, 999)}", "warehouse": warehouse, "delta": -1}
    return "handler raised", err, body


@dataclass(frozen=True)
class Bug:
    label: str
    source_queue: str
    reason: str
    weight: float
    make: Gen
    producer_version: str | None = None  # set when one producer release causes the bug


BUGS = [
    Bug("orders.customer_missing", "orders", "max_claims", 14, customer_missing, "2.4.0"),
    Bug("orders.inventory_timeout", "orders", "max_claims", 12, inventory_timeout),
    Bug("orders.expired", "orders", "expired", 5, order_expired),
    Bug("payments.json_decode", "payments", "rejected", 8, json_decode),
    Bug("payments.amount_below_min", "payments", "rejected", 9, amount_below_min),
    Bug("payments.card_declined", "payments", "max_claims", 7, card_declined),
    Bug("shipping.npe_label", "shipping", "max_claims", 8, npe_label),
    Bug("shipping.npe_customs", "shipping", "max_claims", 4, npe_customs),
    Bug("shipping.carrier_rejected", "shipping", "rejected", 6, carrier_rejected),
    Bug("notifications.smtp_refused", "notifications", "max_claims", 10, smtp_refused),
    Bug("notifications.rate_limited", "notifications", "max_claims", 8, rate_limited),
    Bug("inventory.deadlock", "inventory", "max_claims", 5, deadlock),
    Bug("inventory.unknown_sku", "inventory", "rejected", 4, unknown_sku),
    Bug("notifications.template_missing", "notifications", "rejected", 5, template_missing),
    Bug("inventory.reservation_conflict", "inventory", "max_claims", 3, reservation_conflict),
]


def generate(count: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """`count` labelled dead letters; the same seed gives the same records."""
    rng = random.Random(seed)
    weights = [b.weight for b in BUGS]
    # Each bug bursts around its own hour, as incidents do.
    centers = {b.label: rng.uniform(2, WINDOW_HOURS - 2) for b in BUGS}
    for _ in range(count):
        bug = rng.choices(BUGS, weights)[0]
        description, error, body = bug.make(rng)
        hours = min(WINDOW_HOURS, max(0.0, rng.gauss(centers[bug.label], 3)))
        dead_at = START + timedelta(hours=hours)
        enqueued = dead_at - timedelta(seconds=rng.randint(30, 3600))
        attributes = {
            "tenant": rng.choice(TENANTS),
            "producer_version": bug.producer_version or rng.choice(OLD_VERSIONS),
            "trace_id": _hex(rng, 16),
        }
        yield {
            "message_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "source_queue": bug.source_queue,
            "reason": bug.reason,
            "description": description,
            "error": error,
            "dead_lettered_at": dead_at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "claim_count": 5 if bug.reason == "max_claims" else 1,
            "body": body,
            "attributes": {k: {"type": "String", "value": v} for k, v in attributes.items()},
            "enqueued_at": enqueued.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "history": [],
            "label": bug.label,
        }


def write_jsonl(path: str | Path, count: int, seed: int = 0) -> int:
    """Write the corpus as an export-format JSON-lines file; returns the number written."""
    n = 0
    with Path(path).open("w") as fh:
        for record in generate(count, seed):
            fh.write(json.dumps(record, separators=(",", ":")) + "\n")
            n += 1
    return n


def grouping_accuracy(truth: dict[str, str], predicted: dict[str, str]) -> float:
    """Share of messages whose predicted group holds exactly the messages of their true group."""
    if not truth:
        return 1.0
    true_sizes: dict[str, int] = {}
    for label in truth.values():
        true_sizes[label] = true_sizes.get(label, 0) + 1
    members: dict[str, list[str]] = {}
    for mid in truth:
        members.setdefault(predicted.get(mid, f"?{mid}"), []).append(mid)
    correct = 0
    for group in members.values():
        labels = {truth[mid] for mid in group}
        if len(labels) == 1 and true_sizes[labels.pop()] == len(group):
            correct += len(group)
    return correct / len(truth)


def _groups(labels: dict[str, str]) -> dict[str, frozenset[str]]:
    members: dict[str, set[str]] = {}
    for mid, label in labels.items():
        members.setdefault(label, set()).add(mid)
    return {label: frozenset(ids) for label, ids in members.items()}


def f1_grouping(truth: dict[str, str], predicted: dict[str, str]) -> float:
    """FGA (Loghub-2.0): the F1 of the share of predicted groups that equal a true group as a
    set and the share of true groups that some predicted group equals."""
    if not truth:
        return 1.0
    full = {mid: predicted.get(mid, f"?{mid}") for mid in truth}
    true_sets = set(_groups(truth).values())
    found = set(_groups(full).values())
    exact = len(true_sets & found)
    if exact == 0:
        return 0.0
    precision, recall = exact / len(found), exact / len(true_sets)
    return 2 * precision * recall / (precision + recall)


def adjusted_rand_index(truth: dict[str, str], predicted: dict[str, str]) -> float:
    """ARI of two partitions of the same messages (Hubert and Arabie), 1.0 when identical."""
    n = len(truth)
    if n < 2:
        return 1.0

    def pairs(k: int) -> float:
        return k * (k - 1) / 2

    cells: dict[tuple[str, str], int] = {}
    rows: dict[str, int] = {}
    cols: dict[str, int] = {}
    for mid, label in truth.items():
        guess = predicted.get(mid, f"?{mid}")
        cells[(label, guess)] = cells.get((label, guess), 0) + 1
        rows[label] = rows.get(label, 0) + 1
        cols[guess] = cols.get(guess, 0) + 1
    index = sum(pairs(c) for c in cells.values())
    sum_rows = sum(pairs(c) for c in rows.values())
    sum_cols = sum(pairs(c) for c in cols.values())
    expected = sum_rows * sum_cols / pairs(n)
    best = (sum_rows + sum_cols) / 2
    if best == expected:
        return 1.0
    return (index - expected) / (best - expected)
