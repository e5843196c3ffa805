"""The names of things, one pattern per kind, always matched whole.

A pattern written `^...$` and tried with `re.match` takes a name that ends in a newline (`$`
matches before a final `\\n`): such a queue was stored, and the answer to its own creation
then failed, its `Location` header unwritable. Every check of a name goes through `Kind.valid`
here, which matches the whole text (`fullmatch`): no control character passes, at the end
or anywhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """A kind of name: what a refusal calls it, its rule in words, and its pattern."""

    what: str
    rule: str
    pattern: re.Pattern[str]

    def valid(self, name: object) -> bool:
        return isinstance(name, str) and self.pattern.fullmatch(name) is not None


def _kind(what: str, rule: str, pattern: str) -> Kind:
    assert not pattern.startswith("^") and not pattern.endswith("$"), "matched whole anyway"
    return Kind(what, rule, re.compile(pattern))


_WORD = "ASCII letters, digits, underscores and dashes"
# A queue the Zaqar face creates (Zaqar's own alphabet and length).
QUEUE = _kind("queue name", f"1 to 64 {_WORD}", r"[a-zA-Z0-9_-]{1,64}")
# A queue either face may have made, as a DLQ or a template names it.
QUEUE_REFERENCE = _kind(
    "queue name", f"1 to 80 {_WORD}, and .fifo", r"[a-zA-Z0-9_-]{1,80}(\.fifo)?"
)
# A queue the SQS face creates: AWS's rule (80 characters, the .fifo suffix among them).
SQS_QUEUE = _kind(
    "queue name",
    f"1 to 80 {_WORD}; a FIFO queue's ends in .fifo",
    r"[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo",
)
# Any queue name of either face (a page token names one).
ANY_QUEUE = _kind("queue name", f"1 to 80 {_WORD} and periods", r"[A-Za-z0-9_.-]{1,80}")
# Consumer tags follow queue names.
TAG = _kind("tag name", f"1 to 64 {_WORD}", r"[A-Za-z0-9_-]{1,64}")
TEMPLATE = _kind("template name", f"1 to 64 {_WORD}", r"[a-zA-Z0-9_-]{1,64}")
# A filter saved on a DLQ (a failure group by name).
SAVED_FILTER = _kind("filter name", f"1 to 64 {_WORD}", r"[A-Za-z0-9_-]{1,64}")
TEMPLATE_PATTERN = _kind(
    "template pattern",
    "a glob of 1 to 128 characters: queue-name characters, '.', and the wildcards * ? [...] [!...]",
    r"[a-zA-Z0-9_.*?!\[\]-]{1,128}",
)
# A tenant: ASCII letters, digits, '_', '-' and '.' (Keystone project ids, account numbers and
# plain names all fit); never '@', which separates a tenant from a derived project's part
# (domain/projects.py).
TENANT = _kind(
    "project", "1 to 256 ASCII letters, digits, '_', '-' or '.'", r"[A-Za-z0-9_.-]{1,256}"
)
# An AWS region's name (us-east-1, eu-central-2, us-gov-west-1, ap-southeast-5...).
REGION = _kind("region", "an AWS region's name (us-east-1)", r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}")
# A project: a tenant, or a tenant's project of one region (`<tenant>@<region>`).
PROJECT = _kind(
    "project",
    "a project name (1 to 256 ASCII letters, digits, '_', '-' or '.'), optionally followed by "
    "'@<region>'",
    rf"{TENANT.pattern.pattern}(?:@{REGION.pattern.pattern})?",
)
PERMISSION_LABEL = _kind("permission label", f"1 to 80 {_WORD}", r"[A-Za-z0-9_-]{1,80}")
ACCOUNT = _kind("account id", "12 digits", r"\d{12}")
# The engine's ids (messages, claims, tasks, subscriptions) are UUIDs.
ID = _kind("id", "a UUID", r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

KINDS = (
    QUEUE,
    QUEUE_REFERENCE,
    SQS_QUEUE,
    ANY_QUEUE,
    TAG,
    TEMPLATE,
    SAVED_FILTER,
    TEMPLATE_PATTERN,
    TENANT,
    PROJECT,
    PERMISSION_LABEL,
    ACCOUNT,
    REGION,
    ID,
)
