"""What `deadletter analyze` takes, checked before Spark starts so that a wrong input is
refused at once: the files `deadletter dlq export` writes, or a DLQ on a server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

import click
import msgspec

from deadletter.cli.config import unreachable_hint
from deadletter.cli.output import UNREACHABLE, Failure, no_such_queue
from deadletter.client import ApiError, Client, QueueNotFound, Unreachable

# Lines of a large export read before Spark starts: a wrong file is wrong from its first line.
CHECKED_LINES = 1000
# An export up to this size is checked whole.
CHECKED_BYTES = 64 * 1024 * 1024
EXPORT_HELP = "--input takes what `deadletter dlq export` writes (a JSON object a line, or Parquet)"


def check_input(path: Path, *, whole: bool = True) -> None:
    """Failure unless `path` looks like an export: Parquet with a message_id column, or JSON
    lines each an object with a message id (every line of a file up to CHECKED_BYTES when
    `whole`, else and in a larger one the first CHECKED_LINES; the first file of a folder)."""
    if path.is_dir():
        parts = sorted(
            p for p in path.iterdir() if p.is_file() and not p.name.startswith((".", "_"))
        )
        if not parts:
            raise Failure(f"{path} holds no files; {EXPORT_HELP}")
        path = parts[0]
    with path.open("rb") as fh:
        head = fh.read(4)
    if path.suffix == ".parquet" or head == b"PAR1":
        _check_parquet(path)
        return
    whole = whole and path.stat().st_size <= CHECKED_BYTES
    if not (whole and _every_line_an_export_line(path)):
        _check_lines(path, None if whole else CHECKED_LINES)


def _check_lines(path: Path, limit: int | None) -> None:
    """Failure at the first of the file's lines (its first `limit`) that is no export line."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if limit is not None and number > limit:
                return
            if not raw.strip():
                continue
            try:
                doc = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                raise Failure(f"{path} line {number} is not JSON; {EXPORT_HELP}") from None
            if not isinstance(doc, dict):
                raise Failure(f"{path} line {number} is not a JSON object; {EXPORT_HELP}")
            if not isinstance(doc.get("message_id"), str) or not doc["message_id"]:
                raise Failure(f"{path} line {number} has no message_id; {EXPORT_HELP}")


class _Line(msgspec.Struct):
    message_id: Annotated[str, msgspec.Meta(min_length=1)]


_LINES = msgspec.json.Decoder(_Line).decode_lines


def _every_line_an_export_line(path: Path) -> bool:
    """Whether each line of the file is a JSON object with a message id, by one decoding of
    the whole file, when it is written one object a line (each line starts with `{` and ends
    with `}`: a newline then falls between two values only, so that as many values as lines
    are one a line). False when unsure: the line-by-line check then says which line."""
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"
    lines = data.count(b"\n")
    if (
        b"\r" in data
        or b"\n\n" in data
        or not data.startswith(b"{")
        or data.count(b"\n{") != lines - 1
        or data.count(b"}\n") != lines
    ):
        return False
    try:
        return len(_LINES(data)) == lines
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False


def _check_parquet(path: Path) -> None:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return  # Spark reads it, or says that the extra is missing
    try:
        names = pq.read_schema(path).names
    except Exception as exc:  # pyarrow raises several kinds for a file that is not Parquet
        raise Failure(f"{path} is not a Parquet file ({exc}); {EXPORT_HELP}") from None
    if "message_id" not in names:
        raise Failure(f"{path} has no message_id column; {EXPORT_HELP}")


def check_queue(
    url: str,
    project: str | None,
    credential: tuple[str, str] | None,
    queue: str,
    origin: Any,
    *,
    where: dict[str, Any],
) -> None:
    """The DLQ exists, is a DLQ, the server answers, and takes the filter options (if any),
    before anything starts."""
    with Client(url, project, credential=credential) as client:
        try:
            _require_dlq(client, queue, client.get_queue(queue))
            if where:
                client.count_dead_letters(queue, **where)
        except QueueNotFound:
            raise no_such_queue(client, queue) from None
        except ApiError as exc:
            raise Failure(f"{exc.title}: {exc.description}") from None
        except Unreachable as exc:
            raise Failure(f"{exc}\n{unreachable_hint(origin)}", UNREACHABLE) from None


def _require_dlq(client: Client, queue: str, metadata: dict[str, Any]) -> None:
    """Failure unless `queue` is a dead-letter queue: one some queue names as its DLQ, or one
    holding dead letters still (its sources gone). Another queue's messages are live work,
    not failures: patterns found in them, and stored on that queue, would mean nothing."""
    target = metadata.get("_dead_letter_queue")
    if target:  # a source queue (no chains: a source is never a DLQ)
        raise Failure(
            f"{queue!r} is not a dead-letter queue: its dead letters go to {target!r};"
            f" analyse those: deadletter analyze --queue {target}"
        )
    if client.dead_letter_sources(queue):
        return
    first = next(client.dead_letter_pages(queue, page_size=1), [])
    if any(m.get("provenance") for m in first):
        return
    raise Failure(
        f"{queue!r} is not a dead-letter queue: no queue names it as its DLQ and it holds no"
        f" dead letters, so there is nothing to analyse (its messages: deadletter peek {queue});"
        " `deadletter queue list` names each queue's dead-letter queue"
    )


def check_filter(where: dict[str, Any], input_path: Path | None) -> None:
    """The filter options select on the server, as it reads the DLQ; an export file was
    selected when it was written."""
    if where and input_path is not None:
        raise click.UsageError(
            "the filter options select dead letters on the server, not in an --input file:"
            " export them with the same options (deadletter dlq export DLQ --out FILE"
            " --error-class ...) and analyse that file, or analyse --queue DLQ with them"
        )


def source_options(
    url: str,
    project: str | None,
    credential: tuple[str, str] | None,
    queue: str | None,
    where: dict[str, Any],
) -> dict[str, str]:
    """The data source's options for reading `queue` from the server (docs/pipeline.md):
    the filter options as its option `filter`, the filter language as one query string."""
    options = {"url": url, "queue": queue or "", "project": project or ""}
    if credential is not None:
        options.update(key_id=credential[0], secret=credential[1])
    if where:
        options["filter"] = urlencode(where, doseq=True)
    return options
