"""The engine: queues, claims and the dead-letter lifecycle, independent of HTTP and SQL.

This package is the engine's façade: the faces (`deadletter.api`) import what they use of the
engine from here and from nowhere deeper (tests/test_layers.py holds them to it). That is the
`Engine` with its parts (`engine.templates`, `engine.subscriptions`), the listener interface
through which its events reach metrics, long polls and the console, the credential authority,
and the few rules and values a face's answers need.
"""

from deadletter.engine.credentials import Authority, Credential, is_signed_url, parse_role
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from deadletter.engine.fifo import check_id as check_fifo_id
from deadletter.engine.fifo import sequence_number
from deadletter.engine.tag_operations import TagInfo
from deadletter.engine.visibility import VisibilityChange
from deadletter.storage.base import Deferred

__all__ = [
    "Authority",
    "Credential",
    "Deferred",
    "Engine",
    "EngineListener",
    "TagInfo",
    "VisibilityChange",
    "check_fifo_id",
    "is_signed_url",
    "parse_role",
    "sequence_number",
]
