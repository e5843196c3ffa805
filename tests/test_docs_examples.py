"""Every shell example in docs/*.md, run as a reader runs it: each file's ```sh, ```bash and
```console blocks (and any untyped block of `curl` lines) pasted into bash in order, against a
fresh server of its own, with `deadletter`, `curl` and `aws` on the path.

A block runs as written, but for the server's address: `http://127.0.0.1:8888` (the
default) becomes the test server's. A curl that the server answers with 4xx or 5xx fails the
block (`--fail-with-body`), as a `deadletter` command that exits non-zero does. In a
```console block each `$ ` line is run and what it prints must be the lines that follow.

Two HTML comments, on the line before a block, say more; a reader of the rendered page sees
neither:

- `<!-- not-run: REASON -->`: the block is not run (it starts a server, needs a cluster, is a
  benchmark of minutes). The reasons are listed by
  `test_every_shell_block_is_run_or_says_why_not`, and their number is pinned, so that no
  block stops running unnoticed.
- `<!-- run-before: CODE -->`: CODE runs first, for what the page leaves to the reader (the
  ids of a claim its text just made, a file a command reads).
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.api.serve_process import start, stop
from tests.services import missing
from tests.support.reader import reader_shell

DOCS = Path(__file__).parents[1] / "docs"
DEFAULT_URL = "http://127.0.0.1:8888"
SHELLS = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<code>.*?)^```[ \t]*$", re.S | re.M)
MARK = re.compile(r"<!-- (?P<kind>not-run|run-before):(?P<text>(?:(?!<!--).)*?)-->\s*\Z", re.S)
AWS = Path(sys.executable).parent / "aws"
# The blocks that say why they are not run: a new one must be added here on purpose.
NOT_RUN = 24


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # of the block's first line of code, for the failure message
    lang: str
    code: str
    not_run: str | None  # the reason, when marked
    before: str  # run-before code


def blocks_of(path: Path) -> list[Block]:
    """The shell blocks of one page, in order."""
    text = path.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        lang, code = m.group("lang"), m.group("code")
        curl = lang == "" and any(line.startswith("curl ") for line in code.splitlines())
        if lang not in SHELLS and not curl:
            continue
        mark = MARK.search(text[: m.start()])
        kind, said = (mark.group("kind"), mark.group("text").strip()) if mark else (None, "")
        found.append(
            Block(
                doc=path.name,
                line=text.count("\n", 0, m.start("code")) + 1,
                lang=lang,
                code=code,
                not_run=said if kind == "not-run" else None,
                before=said if kind == "run-before" else "",
            )
        )
    return found


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def runnable_pages() -> list[str]:
    return [p.name for p in pages() if any(b.not_run is None for b in blocks_of(p))]


def console_script(block: Block) -> str:
    """A ```console block as commands that check their output: each `$ ` line runs, its
    output (stdout and stderr, whatever the exit code) compared with the lines after it."""
    out, command, expected = [], None, []

    def flush() -> None:
        if command is not None:
            want = "\n".join(expected)
            out.append(f"expect_output {shell_quote(want)} {shell_quote(command)}")

    for line in block.code.splitlines():
        if line.startswith("$ "):
            flush()
            command, expected = line[2:], []
        else:
            expected.append(line)
    flush()
    return "\n".join(out) + "\n"


def shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


PRELUDE = r"""set -euo pipefail
curl() { command curl --fail-with-body --show-error "$@"; }
expect_output() {
    local got
    got=$( (eval "$2") 2>&1 || true)
    if [ "$got" != "$1" ]; then
        printf 'the output of: %s\n--- expected:\n%s\n--- got:\n%s\n' "$2" "$1" "$got" >&2
        return 1
    fi
}
"""


def script_of(blocks: list[Block], url: str) -> str:
    parts = [PRELUDE]
    for b in blocks:
        if b.not_run is not None:
            continue
        code = console_script(b) if b.lang == "console" else b.code
        parts.append(f"echo '--- docs/{b.doc} line {b.line}' >&2\n")
        parts.append(f"{b.before}\n{code}".replace(DEFAULT_URL, url))
    return "".join(parts)


def test_every_shell_block_is_run_or_says_why_not() -> None:
    every = [b for p in pages() for b in blocks_of(p)]
    not_run = [b for b in every if b.not_run is not None]
    listed = "\n".join(f"docs/{b.doc}:{b.line}: {b.not_run}" for b in not_run)
    # Every block that is not run says why, and their number is the one pinned above
    assert all(b.not_run for b in not_run), listed
    assert len(not_run) == NOT_RUN, listed
    assert len(every) - len(not_run) >= 35, "most examples run"
    # A run-before mark sits on a block that runs
    assert all(not (b.before and b.not_run) for b in every)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", runnable_pages())
def test_the_examples_run_as_written(page: str, tmp_path: Path) -> None:
    blocks = blocks_of(DOCS / page)
    if any("aws " in b.code for b in blocks if b.not_run is None) and not AWS.exists():
        missing(f"the AWS CLI is not installed at {AWS} (the [aws] extra)")
    # Given a fresh server, and a shell like the reader's with the package's commands
    proc, url = start(f"sqlite:///{tmp_path / 'docs.db'}", tmp_path)
    work, env = reader_shell(tmp_path, url)
    try:
        # When its blocks run in order, as pasted
        done = subprocess.run(
            ["bash", "-c", script_of(blocks, url)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=500,
        )
    finally:
        stop(proc)
    # Then none fails
    assert done.returncode == 0, (
        f"docs/{page} failed (exit {done.returncode}) in the block after the last marker:\n"
        f"{done.stderr[-4000:]}\n--- stdout:\n{done.stdout[-3000:]}"
    )


def test_a_console_block_checks_what_each_command_prints(tmp_path: Path) -> None:
    # Given a page whose console block shows one output right and one wrong
    page = tmp_path / "page.md"
    page.write_text(
        '<!-- run-before: greet() { echo "hello $1"; } -->\n'
        "```console\n$ greet ada\nhello ada\n```\n\n"
        "```console\n$ greet bob\nhello ada\n```\n",
        encoding="utf-8",
    )
    first, second = blocks_of(page)
    # When each runs on its own, the run-before's function defined for it
    ok = subprocess.run(["bash", "-c", script_of([first], DEFAULT_URL)], capture_output=True)
    wrong = subprocess.run(
        ["bash", "-c", script_of([first, second], DEFAULT_URL)], capture_output=True, text=True
    )
    # Then the right output passes and the wrong one fails, saying what it got
    assert ok.returncode == 0, ok.stderr
    assert wrong.returncode == 1
    assert "--- got:\nhello bob" in wrong.stderr
