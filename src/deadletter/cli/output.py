"""What every client command shares: the server options, errors as messages, and output as a
table that fits the terminal or, with --json, as JSON for scripts."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import click

from deadletter.cli.config import (
    CONFIG_ENV,
    PROJECT_ENV,
    URL_ENV,
    Setting,
    resolve,
    unreachable_hint,
)
from deadletter.client import (
    DEFAULT_PROJECT,
    DEFAULT_URL,
    ApiError,
    Client,
    QueueNotFound,
    Unreachable,
)
from deadletter.terminal import terminal_safe

F = TypeVar("F", bound=Callable[..., Any])

# A dead letter that leaves its DLQ sooner than this is said when a command sets it up
# (queue create/update, template create/update).
SHORT_DEAD_LETTER_LIFE = 3600
MIN_FLEXIBLE = 10  # free text narrower than this says nothing
# A uuid's last 8 hex digits: unique enough to read a table by, not to script with. The last,
# as the console shows them: ids made in the same minute share their first (engine/ids.py).
SHORT_ID = 8


# Exit codes (docs/cli.md): 1 the server refused, or what was named does not exist or is not
# what the command needs; 2 a usage error (click's own) or no server answering.
REFUSED = 1
UNREACHABLE = 2
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended


class Failure(click.ClickException):
    """A command that cannot do what was asked: one line saying what went wrong and, where
    there is one, what to do instead."""

    def __init__(self, message: str, exit_code: int = REFUSED) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click's is a class default

    def show(self, file: Any = None) -> None:
        echo(f"error: {self.message}", err=True)


def no_such_queue(client: Client, name: str, make: str | None = None) -> Failure:
    """A queue that does not exist, with the nearest name the project has; `make` says how
    the command itself would make it."""
    try:
        names = [q["name"] for q in client.list_queues()]
    except (ApiError, Unreachable):
        names = []
    import difflib

    near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if near:
        also = f"; {make} makes it" if make else ""
        hint = f"did you mean {near[0]!r}? (deadletter queue list{also})"
    else:
        hint = f"see deadletter queue list, or make it: {make or f'deadletter queue create {name}'}"
    return Failure(f"queue {name!r} does not exist; {hint}")


def server_options(command: F) -> F:
    """Add --url and --project (each also from the environment, then the config file); the
    command receives `client` instead."""

    @click.option(
        "--url",
        default=None,
        help=f"The server's base URL [env {URL_ENV}, then `url` in the config file "
        f"(${CONFIG_ENV} or ~/.config/deadletter/config.toml); default: {DEFAULT_URL}]",
    )
    @click.option(
        "--project",
        default=None,
        help=f"The project (tenant); the SQS face calls it the account [env {PROJECT_ENV}, "
        f"then `project` in the config file; default: {DEFAULT_PROJECT}]",
    )
    @functools.wraps(command)
    def wrapper(*args: Any, url: str | None, project: str | None, **kwargs: Any) -> Any:
        root = click.get_current_context().find_root().params
        server = resolve(url, project, root.get("key_id"), root.get("secret"))
        # With a credential, an unstated project is the credential's own (the server knows it).
        chosen = server.project
        if chosen.origin != "the default":  # the default is one
            check_project(chosen)
        project = None if server.credential and chosen.origin == "the default" else chosen.value
        with Client(server.url.value, project, credential=server.credential) as client:
            try:
                return command(*args, client=client, **kwargs)
            except QueueNotFound as exc:
                raise no_such_queue(client, exc.queue) from None
            except ApiError as exc:
                raise Failure(f"{exc.title}: {exc.description}") from None
            except Unreachable as exc:
                raise Failure(f"{exc}\n{unreachable_hint(server.url)}", UNREACHABLE) from None

    return wrapper  # type: ignore[return-value]


def check_project(chosen: Setting) -> None:
    """A project the reader named, held to the server's rule for names (imported here, as
    only a named project needs it)."""
    from deadletter.domain.projects import MAX_TENANT, is_project

    if not is_project(chosen.value):
        raise click.BadParameter(
            f"{chosen.value!r} (from {chosen.origin}) is not a project name: 1 to "
            f"{MAX_TENANT} ASCII letters, digits, '_', '-' or '.', optionally '@<region>'.",
            param_hint="--project",
        )


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
wide_option = click.option(
    "--wide", is_flag=True, help="Full ids and timestamps, however wide the table gets."
)


class Named(click.ParamType[str]):
    """A name or an id given on the command line: never empty, so that a script whose variable
    came out empty (a claim that found nothing) is told so, not sent to another resource."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            what = param.human_readable_name if param is not None else "the value"
            self.fail(f"{what} is empty", param, ctx)
        return value


NAMED = Named()


def echo(message: str = "", *, err: bool = False) -> None:
    """Every line a command prints goes through here: `message` made `terminal_safe`."""
    click.echo(terminal_safe(message), err=err)


def print_json(data: Any) -> None:
    echo(json.dumps(data, indent=2, ensure_ascii=False))


def print_table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    wide: bool = False,
    flexible: Sequence[str] = (),
    optional: Sequence[str] = (),
    empty: str | None = None,
) -> None:
    """A table that fits the terminal: every column keeps its values whole and on one line
    except the `flexible` ones (free text), which share what is left and are cut with an
    ellipsis. `optional` columns (details) are left out, the rightmost first, while the rest
    would not fit, and a line after the table names them. With `wide`, nothing is cut or left
    out and the table is as wide as its content. With no rows, `empty` (a sentence) is said
    instead of a header over nothing.

    Drawn as plain lines (a header, a rule, a row a line, two spaces between columns): a
    table printer's import would cost a command more than the rest of its start."""
    columns = list(columns)
    cells = [[terminal_safe(_one_line("" if v is None else str(v))) for v in row] for row in rows]
    if not cells and empty is not None:
        echo(empty)
        return
    width = _terminal_width()
    widths = [max([cell_len(c), *(cell_len(r[i]) for r in cells)]) for i, c in enumerate(columns)]

    def needed(keep: list[int]) -> int:
        # Each column costs its width plus two: a separator and a space (collapsed padding).
        flex = [i for i in keep if columns[i] in flexible]
        return sum(widths[i] + 2 for i in keep if i not in flex) + len(flex) * (MIN_FLEXIBLE + 2)

    keep = list(range(len(columns)))
    left_out: list[str] = []
    for i in reversed(range(len(columns))):
        if wide or needed(keep) <= width:
            break
        if columns[i] in optional:
            keep.remove(i)
            left_out.insert(0, columns[i])
    cut = [columns[i] in flexible and not wide for i in keep]
    fixed = sum(widths[i] + 2 for i, flex in zip(keep, cut, strict=True) if not flex)
    share = max(MIN_FLEXIBLE, (width - fixed) // max(1, sum(cut)) - 2)
    pairs = zip(keep, cut, strict=True)
    shown = [min(widths[i], share) if flex else widths[i] for i, flex in pairs]

    def line(values: Sequence[str]) -> str:
        padded = (_fit(v, w) for v, w in zip(values, shown, strict=True))
        return f" {'  '.join(padded)} "

    total = sum(shown) + 2 * len(shown)
    out = [] if title is None else [_fit(title, total)]
    out += [" " * total, line([columns[i] for i in keep]), f" {'─' * (total - 2)} "]
    out += [line([row[i] for i in keep]) for row in cells]
    out.append(" " * total)
    echo("\n".join(out))
    if left_out:
        echo(f"(--wide shows {', '.join(left_out)} too)")


def cell_len(text: str) -> int:
    """The columns `text` takes on a terminal: East Asian wide characters two, combining
    marks none."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _fit(text: str, width: int) -> str:
    """`text` padded to `width` columns, or cut to them with an ellipsis."""
    size = cell_len(text)
    if size <= width:
        return text + " " * (width - size)
    kept = ""
    for c in text:
        if cell_len(kept + c) > width - 1:
            break
        kept += c
    return kept + "…" + " " * (width - 1 - cell_len(kept))


def _one_line(text: str) -> str:
    """A cell on one line: line breaks and tabs as spaces."""
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ")


def _terminal_width() -> int:
    """$COLUMNS, else the terminal's width, else 80 (output to a file or a pipe): what
    shutil.get_terminal_size says, without importing shutil and its archivers."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def counted(count: int, noun: str) -> str:
    """`1 dead letter`, `2 dead letters`, `0 patterns`: a count with its noun agreeing."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def brief(value: Any, width: int = 60) -> str:
    """A body or text cut to fit a table cell."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


def short_id(value: Any, wide: bool = False) -> str | None:
    """A uuid's last digits in a table; `--wide` (and `--json`, `--quiet`) give the whole id."""
    if value is None:
        return None
    text = str(value)
    return text if wide or len(text) <= SHORT_ID else text[-SHORT_ID:]


def when(value: Any, wide: bool = False) -> str | None:
    """An ISO 8601 instant as `MM-DD HH:MM:SS` (UTC) in a table; `--wide` keeps it whole."""
    if value is None or wide:
        return value if value is None else str(value)
    try:
        instant = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return str(value)
    if instant.tzinfo is not None:
        instant = instant.astimezone(UTC)
    return instant.strftime("%m-%d %H:%M:%S")


def iso_time(epoch: Any) -> Any:
    """Epoch seconds (as some documents give times) as an ISO 8601 instant in UTC, to the
    second; anything else as it is."""
    if isinstance(epoch, bool) or not isinstance(epoch, int | float):
        return epoch
    instant = datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
    return instant.replace("+00:00", "Z")


def oldest_expiry(stats: dict[str, Any], noun: str = "message") -> str | None:
    """When a queue's oldest message (on a DLQ, its oldest dead letter) expires, from the
    queue's stats: the instant, and how long from the server's now (its `created` and `age`
    say the server's clock, which the client need not share)."""
    oldest = (stats.get("messages") or {}).get("oldest") or {}
    expires, created, age = oldest.get("expires"), oldest.get("created"), oldest.get("age")
    if expires is None:
        return None
    try:
        left = (
            datetime.fromisoformat(str(expires).replace("Z", "+00:00"))
            - datetime.fromisoformat(str(created).replace("Z", "+00:00"))
        ).total_seconds() - float(age or 0)
    except (TypeError, ValueError):
        return f"the oldest {noun} expires {expires}"
    return f"the oldest {noun} expires {expires} (in {_duration(left)})"


def _duration(seconds: float) -> str:
    """A span in its largest whole unit or two: `13 d 23 h`, `59 min`, `40 s`."""
    s = max(0, int(seconds))
    days, hours, minutes = s // 86_400, s % 86_400 // 3600, s % 3600 // 60
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min" if minutes else f"{s} s"
