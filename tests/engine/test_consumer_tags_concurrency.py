"""Consumers of two tags claiming and acknowledging at once, each thread with its own store
connection: within a tag no message is handed out twice, every tag receives every message,
and the queue is empty once both tags and the untagged consumers acknowledged everything."""

from __future__ import annotations

import threading
from collections import Counter

from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.engine.helpers import P

MESSAGES = 200
TAGS = ("billing", "shipping")
CONSUMERS_PER_TAG = 3


def _consume(url: str, tag: str | None, got: list[str], senders_done: threading.Event) -> None:
    """Claim and acknowledge until the senders are done and nothing is left."""
    store = open_store(url)
    try:
        engine = Engine(store)
        while True:
            last_round = senders_done.is_set()  # read before the claim: nothing comes after
            claim = engine.claim(P, "q", limit=5, ttl=600, tag=tag)
            if not claim.messages:
                if last_round:
                    return
                continue
            for m in claim.messages:
                got.append(m.id)
                assert engine.delete_message(P, "q", message_id=m.id, claim_id=claim.id, tag=tag)
    finally:
        store.close()


def test_two_tags_each_receive_every_message_once(store_url: str) -> None:
    store = open_store(store_url)
    engine = Engine(store)
    engine.create_queue(P, "q")
    for tag in TAGS:
        engine.create_tag(P, "q", name=tag)
    senders_done = threading.Event()
    got: dict[str | None, list[list[str]]] = {
        t: [[] for _ in range(CONSUMERS_PER_TAG)] for t in (*TAGS, None)
    }
    threads = [
        threading.Thread(target=_consume, args=(store_url, tag, got[tag][i], senders_done))
        for tag in (*TAGS, None)
        for i in range(CONSUMERS_PER_TAG)
    ]
    for t in threads:
        t.start()
    sent: list[str] = []
    try:
        for start in range(0, MESSAGES, 20):
            batch = [NewMessage(body=str(i).encode()) for i in range(start, start + 20)]
            sent += [m.id for m in engine.send(P, "q", messages=batch)]
    finally:
        senders_done.set()
        for t in threads:
            t.join(timeout=300)
    try:
        for tag in (*TAGS, None):
            claimed = [mid for part in got[tag] for mid in part]
            repeats = [mid for mid, n in Counter(claimed).items() if n > 1]
            assert repeats == [], f"{tag}: {len(repeats)} messages were handed out twice"
            assert sorted(claimed) == sorted(sent), tag
        # Every group acknowledged every message: none is left.
        assert engine.get_messages(P, "q", ids=sent) == []
        assert engine.stats(P, "q").total == 0
    finally:
        store.close()
