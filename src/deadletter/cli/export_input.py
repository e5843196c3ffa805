"""What `deadletter analyze --input` takes: the files `deadletter dlq export` writes, checked
before Spark starts so that a wrong file is refused at once."""

from __future__ import annotations

import json
from pathlib import Path

from deadletter.cli.output import Failure

# Lines of a large export read before Spark starts: a wrong file is wrong from its first line.
CHECKED_LINES = 1000
EXPORT_HELP = "--input takes what `deadletter dlq export` writes (a JSON object a line, or Parquet)"


def check_input(path: Path) -> None:
    """Failure unless `path` looks like an export: Parquet with a message_id column, or JSON
    lines each an object with a message id (every line of a file the in-process path takes,
    the first CHECKED_LINES of a larger one, the first file of a folder)."""
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
    from deadletter.pipeline.local import suits

    limit = None if suits(path) else CHECKED_LINES
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
