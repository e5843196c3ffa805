"""A queue's settings are parsed once per stored text: every operation reads its queue's row."""

from __future__ import annotations

import json
from dataclasses import replace

from deadletter.domain.model import QueueSettings
from deadletter.storage.rows import settings_from


def test_the_same_text_is_parsed_once_and_a_changed_text_anew() -> None:
    settings = QueueSettings(claim_ttl=45, metadata={"team": "orders"})
    text = json.dumps(settings.to_dict())
    first = settings_from(text)
    assert first == settings
    assert settings_from(text) is first  # no second parse of an unchanged row
    changed = json.dumps(replace(settings, claim_ttl=90).to_dict())
    assert settings_from(changed).claim_ttl == 90


def test_sqs_labels_stored_under_their_old_name_read_back_as_labels() -> None:
    # A row written before SQS queue tags were named `labels` keeps them under "tags".
    old = {**QueueSettings().to_dict(), "tags": {"team": "orders"}}
    del old["labels"]
    assert settings_from(json.dumps(old)).labels == {"team": "orders"}
    assert "tags" not in QueueSettings(labels={"a": "b"}).to_dict()
