"""The server's log: lines a person reads on a terminal, JSON objects for a log shipper, and
access lines (off unless asked for) without the secrets a query string may carry."""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any, TextIO

from deadletter.terminal import terminal_safe

FORMATS = ("auto", "text", "json")

# Attributes every LogRecord has; anything else came in through `extra=` and is logged too.
_STANDARD = set(
    vars(
        logging.LogRecord(name="", level=0, pathname="", lineno=0, msg="", args=None, exc_info=None)
    )
) | {"message", "asctime"}

# Query parameters that carry a signature or a credential: a presigned SigV4 URL
# (X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, replayable until it expires),
# SigV2's Signature and AWSAccessKeyId, and any name that says signature, token, secret,
# password or credential (Zaqar's URL-Signature among them, when sent as a parameter).
SECRET_PARAMETER = re.compile(
    r"signature|credential|token|secret|password|awsaccesskeyid", re.IGNORECASE
)
REDACTED = "REDACTED"


def redact_query(target: str) -> str:
    """A request target with the values of its secret-bearing query parameters replaced."""
    path, sep, query = target.partition("?")
    if not sep:
        return target
    parts = []
    for pair in query.split("&"):
        name, eq, _value = pair.partition("=")
        parts.append(f"{name}={REDACTED}" if eq and SECRET_PARAMETER.search(name) else pair)
    return f"{path}?{'&'.join(parts)}"


class RedactQuery(logging.Filter):
    """Redacts the request target of uvicorn's access lines (`'%s - "%s %s HTTP/%s" %d'`,
    whose third argument is the path with its query string)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_query(args[2]), *args[3:])
        return True


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {
        key: value
        for key, value in vars(record).items()
        if key not in _STANDARD and key != "color_message" and not key.startswith("_")
    }


class JsonFormatter(logging.Formatter):
    """One JSON object per line, so logs can be shipped and queried without parsing text."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update(_extras(record))
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class TextFormatter(logging.Formatter):
    """`HH:MM:SS level message key=value ...`, local time: a line a person reads on a
    terminal. A line may quote what a client wrote (a name, a header, a webhook's answer),
    so it is made `terminal_safe`, its line breaks too: one event, one line (but for a
    traceback after it)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        extras = " ".join(f"{k}={v}" for k, v in _extras(record).items())
        line = f"{stamp} {record.levelname.lower():<7} {record.getMessage()}"
        line = terminal_safe(f"{line}  {extras}" if extras else line, one_line=True)
        if record.exc_info:
            line += "\n" + terminal_safe(self.formatException(record.exc_info))
        return line


def use_json(fmt: str, stream: TextIO) -> bool:
    """JSON when asked, or with `auto` when the log does not go to a terminal."""
    if fmt == "auto":
        return not (hasattr(stream, "isatty") and stream.isatty())
    return fmt == "json"


def configure_logging(
    level: str, fmt: str = "auto", stream: TextIO | None = None, access_log: bool = True
) -> None:
    """Every logger of the process, uvicorn's included, writes to `stream` (stderr) in the
    format chosen; access lines (uvicorn.access) pass through the redaction filter, and are
    not written at all without `access_log`. Said here, not left to uvicorn's configuration:
    a `--workers` process sets its logging up after uvicorn has."""
    out = stream if stream is not None else sys.stderr
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter() if use_json(fmt, out) else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # uvicorn's loggers propagate to the root so that they share its format.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactQuery) for f in access.filters):
        access.addFilter(RedactQuery())
    access.disabled = not access_log
