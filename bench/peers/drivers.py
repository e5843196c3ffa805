"""Clients of each system behind one small interface: send, receive, ack, release, redrive."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from bench.peers.stats import parse_body

CLAIM_TTL = 60  # Zaqar's minimum claim TTL; releases are explicit, so it never runs out here
VISIBILITY = 30  # SQS's default; what a lost receive costs (moto can answer 500 after hiding)


@dataclass
class Msg:
    key: str
    poison: bool
    handle: Any  # what the system needs to ack or release it


class Session:
    """One connection of one worker thread."""

    def send(self, queue: str, bodies: list[str]) -> list[str]:
        raise NotImplementedError

    def receive(self, queue: str, limit: int) -> list[Msg]:
        raise NotImplementedError

    def receive_one_timed(self, queue: str) -> tuple[float, list[Msg]]:
        """One claim/receive round trip of at most one message: (seconds, messages)."""
        start = time.perf_counter()
        got = self.receive(queue, 1)
        return time.perf_counter() - start, got

    def ack(self, queue: str, msgs: list[Msg]) -> None:
        raise NotImplementedError

    def release(self, queue: str, msgs: list[Msg]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class Driver:
    """How the benchmark talks to one system (one face of it)."""

    batch = 10
    redrive_mode = "native"
    # When the move's own start is known only after it began (a shovel declared by a CLI):
    # the monotonic time it started, which W3 times from instead of its request.
    redrive_started: float | None = None
    notes: list[str]

    def __init__(self) -> None:
        self.notes = []
        self.anomalies: dict[str, int] = {}
        self._anomaly_lock = threading.Lock()

    def anomaly(self, what: str, count: int = 1) -> None:
        """Count a misbehaviour of the system that the workload tolerates (shown in notes)."""
        with self._anomaly_lock:
            self.anomalies[what] = self.anomalies.get(what, 0) + count

    def session(self) -> Session:
        raise NotImplementedError

    def create_queue(self, name: str, dlq: str | None = None, deliveries: int = 3) -> None:
        raise NotImplementedError

    def delete_queue(self, name: str) -> None:
        raise NotImplementedError

    def depth(self, name: str) -> int:
        """Messages in the queue, visible or not."""
        raise NotImplementedError

    def dlq_keys(self, dlq: str, ids_hint: list[str]) -> list[str]:
        """Keys of every message in the DLQ (may consume them)."""
        raise NotImplementedError

    def redrive(self, dlq: str, source: str, count: int, deadline: float) -> int:
        """Move the DLQ's messages back to `source`; returns how many moved by the deadline."""
        raise NotImplementedError

    def client_side_redrive(self, dlq: str, source: str, count: int, deadline: float) -> int:
        """receive from the DLQ, send to the source, delete from the DLQ: in a few threads."""
        moved = 0
        lock = threading.Lock()
        stop = threading.Event()

        def worker() -> None:
            nonlocal moved
            s = self.session()
            try:
                while not stop.is_set() and time.monotonic() < deadline:
                    got = s.receive(dlq, self.batch)
                    if not got:
                        with lock:
                            if moved >= count:
                                return
                        continue
                    s.send(source, [_body_of(m) for m in got])
                    s.ack(dlq, got)
                    with lock:
                        moved += len(got)
                        if moved >= count:
                            stop.set()
            finally:
                s.close()

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()) + 30)
        stop.set()
        return moved

    def version(self) -> str:
        return "?"


def _body_of(m: Msg) -> str:
    body: str = m.handle["body"]
    return body


# --------------------------------------------------------------------------------------------
# Zaqar v2 (deadletter's native face and OpenStack Zaqar)


class ZaqarSession(Session):
    def __init__(self, driver: ZaqarDriver) -> None:
        self.d = driver
        self.http = driver.client()

    def send(self, queue: str, bodies: list[str]) -> list[str]:
        r = self.http.post(
            f"/v2/queues/{queue}/messages",
            json={"messages": [{"body": b, "ttl": 3600} for b in bodies]},
        )
        _check(r, 201)
        return [href.split("?")[0].rsplit("/", 1)[1] for href in r.json()["resources"]]

    def receive(self, queue: str, limit: int) -> list[Msg]:
        r = self.http.post(
            f"/v2/queues/{queue}/claims",
            params={"limit": limit},
            json={"ttl": CLAIM_TTL, "grace": CLAIM_TTL},
        )
        if r.status_code == 204:
            return []
        _check(r, 201)
        return self._messages(r.json()["messages"])

    def _messages(self, answered: list[dict[str, Any]]) -> list[Msg]:
        out = []
        for m in answered:
            path, _, query = m["href"].partition("?")
            claim_id = query.split("claim_id=")[1].split("&")[0] if "claim_id=" in query else ""
            body = m["body"] if isinstance(m["body"], str) else json.dumps(m["body"])
            key, poison = parse_body(body)
            out.append(
                Msg(key, poison, {"id": path.rsplit("/", 1)[1], "claim": claim_id, "body": body})
            )
        return out

    def ack(self, queue: str, msgs: list[Msg]) -> None:
        by_claim: dict[str, list[str]] = {}
        for m in msgs:
            by_claim.setdefault(m.handle["claim"], []).append(m.handle["id"])
        for claim, ids in by_claim.items():
            # A literal comma: Zaqar answers 204 to an encoded one and deletes nothing.
            r = self.http.delete(
                f"/v2/queues/{queue}/messages?ids={','.join(ids)}&claim_ids={claim}"
            )
            _check(r, 204)

    def release(self, queue: str, msgs: list[Msg]) -> None:
        if self.d.per_message_release:
            for m in msgs:
                r = self.http.post(
                    f"/v2/queues/{queue}/messages/{m.handle['id']}/release",
                    params={"claim_id": m.handle["claim"]},
                    json={},
                )
                _check(r, 204)
        else:
            # Zaqar releases a whole claim; the healthy ones were deleted already.
            for claim in {m.handle["claim"] for m in msgs}:
                r = self.http.delete(f"/v2/queues/{queue}/claims/{claim}")
                if r.status_code == 503:
                    # Zaqar/Redis fails to release a claim that lists a message it moved to
                    # the DLQ; the claim then holds its messages until its TTL runs out.
                    self.d.anomaly("claim release answered 503 (messages back after claim TTL)")
                    continue
                _check(r, 204)

    def close(self) -> None:
        self.http.close()


class ZaqarAckingSession(ZaqarSession):
    """deadletter's Zaqar extension: a batch is acknowledged by the session's next claim
    (docs/api.md, "Acknowledging with the next claim"), so consuming is one request per batch.
    What is still pending when the session closes is deleted then."""

    def __init__(self, driver: ZaqarDriver) -> None:
        super().__init__(driver)
        self.pending: list[Msg] = []  # done with, acknowledged by the next claim
        self.queue = ""

    def receive(self, queue: str, limit: int) -> list[Msg]:
        body: dict[str, Any] = {"ttl": CLAIM_TTL, "grace": CLAIM_TTL}
        if self.pending:
            # One claim's messages ride on the claim; any other claim's are deleted as before.
            claim = self.pending[0].handle["claim"]
            riding = [m.handle["id"] for m in self.pending if m.handle["claim"] == claim]
            super().ack(queue, [m for m in self.pending if m.handle["claim"] != claim])
            body["acknowledge"] = {"claim_id": claim, "ids": riding}
            self.pending = []
        r = self.http.post(f"/v2/queues/{queue}/claims", params={"limit": limit}, json=body)
        if r.status_code in (200, 204):
            return []
        _check(r, 201)
        return self._messages(r.json()["messages"])

    def ack(self, queue: str, msgs: list[Msg]) -> None:
        self.queue = queue
        self.pending.extend(msgs)

    def close(self) -> None:
        if self.pending:
            super().ack(self.queue, self.pending)
        super().close()


class ZaqarDriver(Driver):
    def __init__(
        self,
        base_url: str,
        project: str | None,
        *,
        per_message_release: bool,
        native_redrive: bool,
        release_all_of_claim: bool = False,
        ack_on_claim: bool = False,
    ) -> None:
        super().__init__()
        self.ack_on_claim = ack_on_claim
        self.base_url = base_url
        self.project = project
        self.per_message_release = per_message_release
        self.native_redrive = native_redrive
        self.redrive_mode = "native" if native_redrive else "client-side"
        self._admin = self.client()

    def client(self) -> httpx.Client:
        headers = {"Client-ID": str(uuid.uuid4())}
        if self.project:
            headers["X-Project-ID"] = self.project
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=120)

    def session(self) -> Session:
        return ZaqarAckingSession(self) if self.ack_on_claim else ZaqarSession(self)

    def create_queue(self, name: str, dlq: str | None = None, deliveries: int = 3) -> None:
        meta: dict[str, Any] = {}
        if dlq:
            _check(self._admin.put(f"/v2/queues/{dlq}", json={}), 201, 204)
            meta = {"_max_claim_count": deliveries, "_dead_letter_queue": dlq}
        _check(self._admin.put(f"/v2/queues/{name}", json=meta), 201, 204)

    def delete_queue(self, name: str) -> None:
        with contextlib.suppress(httpx.HTTPError):
            self._admin.delete(f"/v2/queues/{name}")

    def depth(self, name: str) -> int:
        r = self._admin.get(f"/v2/queues/{name}/stats")
        _check(r, 200)
        total: int = r.json()["messages"]["total"]
        return total

    def dlq_keys(self, dlq: str, ids_hint: list[str]) -> list[str]:
        keys: list[str] = []
        for i in range(0, len(ids_hint), 20):
            chunk = ids_hint[i : i + 20]
            r = self._admin.get(f"/v2/queues/{dlq}/messages?ids={','.join(chunk)}")
            if r.status_code == 404:
                continue
            _check(r, 200)
            for m in r.json()["messages"]:
                body = m["body"] if isinstance(m["body"], str) else json.dumps(m["body"])
                keys.append(parse_body(body)[0])
        return keys

    def redrive(self, dlq: str, source: str, count: int, deadline: float) -> int:
        if not self.native_redrive:
            return self.client_side_redrive(dlq, source, count, deadline)
        r = self._admin.post(f"/v2/queues/{dlq}/redrives", json={"destination": source})
        _check(r, 201)
        href = r.headers["Location"]
        while time.monotonic() < deadline:
            task = self._admin.get(href).json()
            if task["status"] in ("COMPLETED", "FAILED", "CANCELLED"):
                if task["status"] != "COMPLETED":
                    self.notes.append(f"redrive ended {task['status']}: {task['failure_reason']}")
                moved: int = task["moved"]
                return moved
            time.sleep(0.02)
        moved = self._admin.get(href).json()["moved"]
        return int(moved)


# --------------------------------------------------------------------------------------------
# SQS (deadletter's SQS face and moto), through boto3


class SqsSession(Session):
    def __init__(self, driver: SqsDriver) -> None:
        self.d = driver
        self.sqs = driver.client()

    def send(self, queue: str, bodies: list[str]) -> list[str]:
        r = self.sqs.send_message_batch(
            QueueUrl=self.d.url(queue),
            Entries=[{"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies)],
        )
        if r.get("Failed"):
            raise RuntimeError(f"send failed: {r['Failed'][:2]}")
        return [e["MessageId"] for e in r["Successful"]]

    def receive(self, queue: str, limit: int) -> list[Msg]:
        from botocore.exceptions import ClientError

        try:
            r = self.sqs.receive_message(
                QueueUrl=self.d.url(queue),
                MaxNumberOfMessages=limit,
                WaitTimeSeconds=self.d.wait,
                VisibilityTimeout=VISIBILITY,
            )
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status != 500:
                raise
            # moto: two receives racing to dead-letter one message; the next receive retries.
            self.d.anomaly("ReceiveMessage answered 500")
            return []
        out = []
        for m in r.get("Messages", []):
            key, poison = parse_body(m["Body"])
            out.append(Msg(key, poison, {"rh": m["ReceiptHandle"], "body": m["Body"]}))
        return out

    def ack(self, queue: str, msgs: list[Msg]) -> None:
        r = self.sqs.delete_message_batch(
            QueueUrl=self.d.url(queue),
            Entries=[{"Id": str(i), "ReceiptHandle": m.handle["rh"]} for i, m in enumerate(msgs)],
        )
        if r.get("Failed"):
            raise RuntimeError(f"delete failed: {r['Failed'][:2]}")

    def release(self, queue: str, msgs: list[Msg]) -> None:
        r = self.sqs.change_message_visibility_batch(
            QueueUrl=self.d.url(queue),
            Entries=[
                {"Id": str(i), "ReceiptHandle": m.handle["rh"], "VisibilityTimeout": 0}
                for i, m in enumerate(msgs)
            ],
        )
        if r.get("Failed"):
            codes = sorted({f.get("Code", "?") for f in r["Failed"]})
            self.d.anomaly(f"release failed ({', '.join(codes)})", len(r["Failed"]))

    def close(self) -> None:
        self.sqs.close()


class SqsDriver(Driver):
    def __init__(self, endpoint: str, *, native_redrive: bool, wait: int = 1) -> None:
        super().__init__()
        self.endpoint = endpoint
        self.native_redrive = native_redrive
        self.redrive_mode = "native" if native_redrive else "client-side"
        self.wait = wait
        self._urls: dict[str, str] = {}
        self._arns: dict[str, str] = {}
        self._lock = threading.Lock()
        self._admin = self.client()

    def client(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            "sqs",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            config=Config(retries={"max_attempts": 1}, max_pool_connections=4),
        )

    def url(self, name: str) -> str:
        with self._lock:
            if name not in self._urls:
                self._urls[name] = self._admin.get_queue_url(QueueName=name)["QueueUrl"]
            return self._urls[name]

    def arn(self, name: str) -> str:
        """A queue's ARN, asked once: a move task's polling names it each time, and asking
        anew each time would put a request of its own in the W3 timing."""
        with self._lock:
            if name in self._arns:
                return self._arns[name]
        r = self._admin.get_queue_attributes(QueueUrl=self.url(name), AttributeNames=["QueueArn"])
        arn: str = r["Attributes"]["QueueArn"]
        with self._lock:
            self._arns[name] = arn
        return arn

    def session(self) -> Session:
        return SqsSession(self)

    def create_queue(self, name: str, dlq: str | None = None, deliveries: int = 3) -> None:
        attrs = {"VisibilityTimeout": str(VISIBILITY)}
        if dlq:
            self._admin.create_queue(QueueName=dlq, Attributes=attrs)
            policy = {"deadLetterTargetArn": self.arn(dlq), "maxReceiveCount": str(deliveries)}
            attrs = {**attrs, "RedrivePolicy": json.dumps(policy)}
        self._admin.create_queue(QueueName=name, Attributes=attrs)

    def delete_queue(self, name: str) -> None:
        with contextlib.suppress(Exception):
            self._admin.delete_queue(QueueUrl=self.url(name))

    def depth(self, name: str) -> int:
        r = self._admin.get_queue_attributes(
            QueueUrl=self.url(name),
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )
        return sum(int(v) for v in r["Attributes"].values())

    def dlq_keys(self, dlq: str, ids_hint: list[str]) -> list[str]:
        keys: list[str] = []
        s = self.session()
        try:
            empty = 0
            while empty < 2:
                got = s.receive(dlq, 10)
                empty = 0 if got else empty + 1
                keys.extend(m.key for m in got)
        finally:
            s.close()
        return keys

    def redrive(self, dlq: str, source: str, count: int, deadline: float) -> int:
        if not self.native_redrive:
            return self.client_side_redrive(dlq, source, count, deadline)
        r = self._admin.start_message_move_task(
            SourceArn=self.arn(dlq), DestinationArn=self.arn(source)
        )
        handle = r["TaskHandle"]
        while time.monotonic() < deadline:
            tasks = self._admin.list_message_move_tasks(SourceArn=self.arn(dlq))["Results"]
            task = next((t for t in tasks if t.get("TaskHandle") == handle), tasks[0])
            if task["Status"] in ("COMPLETED", "FAILED", "CANCELLED"):
                if task["Status"] != "COMPLETED":
                    self.notes.append(f"move task ended {task['Status']}")
                return int(task.get("ApproximateNumberOfMessagesMoved", 0))
            time.sleep(0.02)  # as often as the Zaqar driver polls its task
        return count - self.depth(dlq)


# --------------------------------------------------------------------------------------------
# RabbitMQ, through pika with publisher confirms


class RabbitSession(Session):
    def __init__(self, driver: RabbitDriver) -> None:
        import pika

        self.d = driver
        self.conn = pika.BlockingConnection(driver.params())
        self.ch = self.conn.channel()
        self.ch.confirm_delivery()
        self.ch.basic_qos(prefetch_count=20)
        self._consuming: str | None = None
        self._gen: Any = None

    def send(self, queue: str, bodies: list[str]) -> list[str]:
        import pika

        props = pika.BasicProperties(delivery_mode=2)
        for b in bodies:
            # Blocks until the broker confirms: an unroutable or rejected publish raises.
            self.ch.basic_publish("", queue, b.encode(), props, mandatory=True)
        return []

    def receive(self, queue: str, limit: int) -> list[Msg]:
        if self._consuming != queue:
            if self._consuming is not None:
                self.ch.cancel()
            self._gen = self.ch.consume(queue, inactivity_timeout=0.2)
            self._consuming = queue
        out: list[Msg] = []
        for method, _props, body in self._gen:
            if method is None:
                break
            text = body.decode()
            key, poison = parse_body(text)
            out.append(Msg(key, poison, {"tag": method.delivery_tag, "body": text}))
            if len(out) >= limit:
                break
        return out

    def receive_one_timed(self, queue: str) -> tuple[float, list[Msg]]:
        start = time.perf_counter()
        method, _props, body = self.ch.basic_get(queue)
        elapsed = time.perf_counter() - start
        if method is None:
            return elapsed, []
        text = body.decode()
        key, poison = parse_body(text)
        return elapsed, [Msg(key, poison, {"tag": method.delivery_tag, "body": text})]

    def ack(self, queue: str, msgs: list[Msg]) -> None:
        for m in msgs:
            self.ch.basic_ack(m.handle["tag"])

    def release(self, queue: str, msgs: list[Msg]) -> None:
        for m in msgs:
            self.ch.basic_nack(m.handle["tag"], requeue=True)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._consuming is not None:
                self.ch.cancel()
            self.conn.close()


class RabbitDriver(Driver):
    batch = 10

    def __init__(self, host: str = "127.0.0.1", port: int = 5672, *, shovel: bool = False) -> None:
        super().__init__()
        self.host, self.port = host, port
        self.redrive_mode = "shovel" if shovel else "client-side"
        self._created: list[tuple[str, str]] = []

    def params(self) -> Any:
        import pika

        return pika.ConnectionParameters(
            self.host, self.port, credentials=pika.PlainCredentials("guest", "guest")
        )

    def _admin(self, fn: Callable[[Any], Any]) -> Any:
        import pika

        conn = pika.BlockingConnection(self.params())
        try:
            return fn(conn.channel())
        finally:
            conn.close()

    def session(self) -> Session:
        return RabbitSession(self)

    def create_queue(self, name: str, dlq: str | None = None, deliveries: int = 3) -> None:
        args: dict[str, Any] = {"x-queue-type": "quorum"}

        def declare(ch: Any) -> None:
            if dlq:
                exchange = f"{dlq}.dlx"
                ch.exchange_declare(exchange, "fanout", durable=True)
                ch.queue_declare(dlq, durable=True, arguments={"x-queue-type": "quorum"})
                ch.queue_bind(dlq, exchange)
                self._created.append(("exchange", exchange))
                # 3.10 counts returns: a limit of L gives L + 1 deliveries.
                args.update(
                    {
                        "x-delivery-limit": deliveries - 1,
                        "x-dead-letter-exchange": exchange,
                        "x-dead-letter-strategy": "at-least-once",
                        "x-overflow": "reject-publish",
                    }
                )
            ch.queue_declare(name, durable=True, arguments=args)

        self._admin(declare)

    def delete_queue(self, name: str) -> None:
        def delete(ch: Any) -> None:
            ch.queue_delete(name)
            for kind, ex in list(self._created):
                if kind == "exchange" and ex == f"{name}.dlx":
                    ch.exchange_delete(ex)
                    self._created.remove((kind, ex))

        with contextlib.suppress(Exception):
            self._admin(delete)

    def depth(self, name: str) -> int:
        def count(ch: Any) -> int:
            n: int = ch.queue_declare(name, passive=True).method.message_count
            return n

        result: int = self._admin(count)
        return result

    def dlq_keys(self, dlq: str, ids_hint: list[str]) -> list[str]:
        def drain(ch: Any) -> list[str]:
            keys = []
            while True:
                method, _props, body = ch.basic_get(dlq, auto_ack=True)
                if method is None:
                    return keys
                keys.append(parse_body(body.decode())[0])

        result: list[str] = self._admin(drain)
        return result

    def redrive(self, dlq: str, source: str, count: int, deadline: float) -> int:
        if self.redrive_mode != "shovel":
            return self.client_side_redrive(dlq, source, count, deadline)
        return self.shovel(dlq, source, count, deadline)

    def shovel(self, dlq: str, source: str, count: int, deadline: float) -> int:
        """A dynamic shovel from the DLQ to the source that deletes itself once it has moved
        the DLQ's length, acknowledging each message after the source confirms it (as the
        other systems' moves are durable). It is declared through `rabbitmqctl`, whose own
        start (an Erlang VM, about a second) is not the broker's work: the move is timed from
        the first message seen in the source, polled every 2 ms, to the last; the start is
        left in `redrive_started` for the workload."""
        import pika

        name = f"bench-shovel-{uuid.uuid4().hex[:8]}"
        definition = {
            "src-protocol": "amqp091",
            "src-uri": "amqp://",
            "src-queue": dlq,
            "dest-protocol": "amqp091",
            "dest-uri": "amqp://",
            "dest-queue": source,
            "src-delete-after": "queue-length",
            "ack-mode": "on-confirm",
        }
        conn = pika.BlockingConnection(self.params())
        try:
            ch = conn.channel()
            cli = subprocess.Popen(
                ["rabbitmqctl", "set_parameter", "shovel", name, json.dumps(definition)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            moved = 0
            while moved < count and time.monotonic() < deadline:
                moved = ch.queue_declare(source, passive=True).method.message_count
                if moved and self.redrive_started is None:
                    self.redrive_started = time.monotonic()
                time.sleep(0.002)
            cli.wait(60)
            if cli.returncode != 0:
                self.notes.append(f"rabbitmqctl set_parameter shovel exited {cli.returncode}")
        finally:
            conn.close()
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["rabbitmqctl", "clear_parameter", "shovel", name],
                capture_output=True,
                timeout=60,
            )
        return moved

    def version(self) -> str:
        def ask(ch: Any) -> str:
            props = ch.connection._impl.server_properties
            v = props.get("version", b"?")
            return v.decode() if isinstance(v, bytes) else str(v)

        result: str = self._admin(ask)
        return result


def _check(r: httpx.Response, *ok: int) -> None:
    if r.status_code not in ok:
        raise RuntimeError(
            f"{r.request.method} {r.request.url.path} -> {r.status_code}: {r.text[:300]}"
        )
