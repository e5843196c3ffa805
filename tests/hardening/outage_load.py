"""Producers and consumers on both faces of a running server, and the ledger of what each was
told: the at-least-once accounting that the outage tests check.

The producers send on the Zaqar face and on the SQS face in both its protocols (JSON and
query, in turn); the consumers receive and delete on the SQS face, with a short visibility
timeout so that a message whose receive answer was lost comes back within the test.

What counts:
- a write is *acknowledged* when its answer was a 2xx (the message ids it names);
- an acknowledged write is *lost* if no consumer ever receives its message;
- a delete is acknowledged when its answer was a 2xx that came within the visibility timeout
  of the receive that handed the message out (counted from when that receive began, so the
  handle was surely still the message's own when the delete committed). SQS answers a delete
  with a stale handle (the message was received again by then) with success too, without
  deleting it: such late deletes are not acknowledgements, on AWS or here;
- a message is *delivered again* if a receive that began after its delete was acknowledged
  returns it. Deliveries of messages not yet acknowledged may repeat (a visibility timeout
  that lapsed, an answer that was lost): that is at-least-once, and not counted.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

ACCOUNT = "123456789012"
QUEUE = "work"
VISIBILITY = 2
JSON_TYPE = "application/x-amz-json-1.0"


@dataclass(frozen=True)
class Answer:
    face: str  # "zaqar", "sqs-json", "sqs-query"
    action: str
    started: float
    ended: float
    status: int
    # For a 503, whether it was the face's own unavailable answer (Retry-After on Zaqar,
    # ServiceUnavailable on SQS); None otherwise.
    proper_503: bool | None = None


@dataclass
class Ledger:
    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: list[Answer] = field(default_factory=list)
    sent: set[str] = field(default_factory=set)
    received: set[str] = field(default_factory=set)
    # id -> when the first 2xx answer to a delete of it arrived
    deleted_at: dict[str, float] = field(default_factory=dict)
    # (receive began, id) of every message a receive returned
    deliveries: list[tuple[float, str]] = field(default_factory=list)
    # 2xx deletes answered after the visibility timeout: not acknowledgements (above)
    late_deletes: int = 0

    def answer(self, answer: Answer) -> None:
        with self.lock:
            self.answers.append(answer)

    def lost(self) -> set[str]:
        with self.lock:
            return self.sent - self.received

    def delivered_again(self) -> list[str]:
        with self.lock:
            return [
                mid
                for began, mid in self.deliveries
                if mid in self.deleted_at and began > self.deleted_at[mid]
            ]

    def successes_since(self, moment: float, face: str) -> int:
        with self.lock:
            return sum(
                1
                for a in self.answers
                if a.face == face and a.started >= moment and 200 <= a.status < 300
            )


class Load:
    """Client threads against `url` until `stop()`; consumers drain until `drained()`."""

    def __init__(self, url: str, ledger: Ledger) -> None:
        self.url = url
        self.ledger = ledger
        self.queue_url = f"{url}/{ACCOUNT}/{QUEUE}"
        self._producing = threading.Event()
        self._consuming = threading.Event()
        self._threads = [
            threading.Thread(target=self._zaqar_producer, daemon=True),
            threading.Thread(target=self._sqs_producer, daemon=True),
            threading.Thread(target=self._consumer, daemon=True),
            threading.Thread(target=self._consumer, daemon=True),
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def stop_producing(self) -> None:
        """Stop the producers, and wait for the sends they have in flight: a send answered
        after this is counted, and drained, before the consumers stop."""
        self._producing.set()
        for t in self._threads[:2]:
            t.join(timeout=120)

    def stop(self) -> None:
        self._producing.set()
        self._consuming.set()
        for t in self._threads:
            t.join(timeout=120)

    def _client(self) -> httpx.Client:
        # Longer than any deadline of the server's: an answer always comes.
        return httpx.Client(base_url=self.url, timeout=60, headers={"Client-ID": str(uuid.uuid4())})

    def _call(
        self, c: httpx.Client, face: str, action: str, **kwargs: Any
    ) -> httpx.Response | None:
        started = time.time()
        try:
            r = c.post("/" if face != "zaqar" else kwargs.pop("path"), **kwargs)
        except httpx.TransportError:
            return None
        proper = _proper_503(face, r) if r.status_code == 503 else None
        self.ledger.answer(Answer(face, action, started, time.time(), r.status_code, proper))
        return r

    def _zaqar_producer(self) -> None:
        with self._client() as c:
            while not self._producing.is_set():
                body = {"messages": [{"body": {"k": uuid.uuid4().hex}} for _ in range(3)]}
                r = self._call(c, "zaqar", "post", path=f"/v2/queues/{QUEUE}/messages", json=body)
                if r is not None and r.status_code == 201:
                    ids = [h.rsplit("/", 1)[1] for h in r.json()["resources"]]
                    with self.ledger.lock:
                        self.ledger.sent.update(ids)
                time.sleep(0.01)  # a gentle load: the host is shared

    def _sqs_producer(self) -> None:
        with self._client() as c:
            n = 0
            while not self._producing.is_set():
                n += 1
                body = uuid.uuid4().hex
                if n % 2:
                    r = self._sqs_json(c, "SendMessage", {"MessageBody": body})
                    mid = r.json().get("MessageId") if r is not None and r.is_success else None
                else:
                    r = self._sqs_query(c, "SendMessage", {"MessageBody": body})
                    found = re.search(r"<MessageId>([^<]+)</MessageId>", r.text) if r else None
                    mid = found.group(1) if found and r is not None and r.is_success else None
                if mid:
                    with self.ledger.lock:
                        self.ledger.sent.add(mid)
                time.sleep(0.01)

    def _consumer(self) -> None:
        with self._client() as c:
            while not self._consuming.is_set():
                began = time.time()
                r = self._sqs_json(
                    c,
                    "ReceiveMessage",
                    {"MaxNumberOfMessages": 10, "VisibilityTimeout": VISIBILITY},
                )
                if r is None or not r.is_success:
                    time.sleep(0.05)
                    continue
                messages = r.json().get("Messages", [])
                if not messages and self._producing.is_set():
                    time.sleep(0.05)
                with self.ledger.lock:
                    for m in messages:
                        self.ledger.received.add(m["MessageId"])
                        self.ledger.deliveries.append((began, m["MessageId"]))
                for m in messages:
                    d = self._sqs_json(c, "DeleteMessage", {"ReceiptHandle": m["ReceiptHandle"]})
                    answered = time.time()
                    if d is not None and d.is_success:
                        with self.ledger.lock:
                            if answered < began + VISIBILITY:
                                self.ledger.deleted_at.setdefault(m["MessageId"], answered)
                            else:
                                self.ledger.late_deletes += 1

    def _sqs_json(
        self, c: httpx.Client, action: str, params: dict[str, Any]
    ) -> httpx.Response | None:
        return self._call(
            c,
            "sqs-json",
            action,
            json={"QueueUrl": self.queue_url, **params},
            headers={"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": JSON_TYPE},
        )

    def _sqs_query(
        self, c: httpx.Client, action: str, params: dict[str, Any]
    ) -> httpx.Response | None:
        form = {"Action": action, "Version": "2012-11-05", "QueueUrl": self.queue_url, **params}
        return self._call(c, "sqs-query", action, data=form)


def _proper_503(face: str, r: httpx.Response) -> bool:
    if face == "zaqar":
        doc = r.json()
        return set(doc) == {"title", "description"} and r.headers.get("Retry-After") == "5"
    if face == "sqs-json":
        return r.json().get("__type", "").endswith("#ServiceUnavailable") and r.headers.get(
            "x-amzn-query-error", ""
        ).startswith("ServiceUnavailable;")
    return "<Code>ServiceUnavailable</Code>" in r.text and "<Type>Receiver</Type>" in r.text
