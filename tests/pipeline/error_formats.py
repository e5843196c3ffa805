"""A second real corpus that is not logs: error-message formats written by other people.

`extract` reads the `raise` statements of installed Python packages and keeps each message
whose text is a format (an f-string, `"..." % args`, `"...".format(...)`) or a constant
sentence, as their authors wrote it; tests/data/formats/formats.jsonl holds the result with the
package and version each came from. `generate` fills every format with realistic values
(several words among them: error texts, paths with spaces, shell commands, quoted phrases) and
labels each message with the format it came from; a share of formats is written the way a
program reports a failure, `<program>: <message>`, with the program varying.

The formats are split in two halves by a hash of their text: the miner's rules are chosen on
`TUNING`; `HELD_OUT` is read only to report (`./dev bench pipeline --real`).

    PYTHONPATH=src:. python -m tests.pipeline.error_formats extract   # rewrites the data file
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import random
import re
import sys
import uuid
from pathlib import Path

DATA = Path(__file__).parent.parent / "data" / "formats" / "formats.jsonl"
# Import name -> distribution name, for the version.
PACKAGES = {
    "botocore": "botocore",
    "click": "click",
    "cryptography": "cryptography",
    "docutils": "docutils",
    "httpx": "httpx",
    "jsonschema": "jsonschema",
    "openstack": "openstacksdk",
    "oslo_config": "oslo.config",
    "pandas": "pandas",
    "psycopg": "psycopg",
    "pyspark": "pyspark",
    "starlette": "starlette",
    "urllib3": "urllib3",
    "werkzeug": "werkzeug",
}
PER_PACKAGE = 40
SLOT = "\x00"  # where a value goes while extracting; stored as `{}` (literal braces doubled)


def _slots_of_fstring(node: ast.JoinedStr) -> tuple[str, list[str]] | None:
    text, names = [], []
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            text.append(part.value)
        elif isinstance(part, ast.FormattedValue):
            text.append(SLOT)
            names.append(ast.unparse(part.value) + ("!r" if part.conversion == 114 else ""))
        else:
            return None
    return "".join(text), names


_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdrifxXge]")
_BRACES = re.compile(r"\{([^{}]*)\}")


def _slots_of_percent(fmt: str, args: ast.expr) -> tuple[str, list[str]]:
    exprs = args.elts if isinstance(args, ast.Tuple) else [args]
    names: list[str] = []
    for i, m in enumerate(_PERCENT.finditer(fmt)):
        spec = m.group(0)
        if spec.startswith("%("):
            name = spec[2 : spec.index(")")]
        elif i < len(exprs):
            name = ast.unparse(exprs[i])
        else:
            name = "value"
        names.append(name + ("!r" if spec.endswith("r") else "!d" if spec[-1] in "di" else ""))
    return _PERCENT.sub(SLOT, fmt.replace("%%", "%")), names


def _slots_of_format(fmt: str, call: ast.Call) -> tuple[str, list[str]]:
    names: list[str] = []
    positional = [ast.unparse(a) for a in call.args]
    keywords = {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}
    for i, m in enumerate(_BRACES.finditer(fmt)):
        field = m.group(1).split("!")[0].split(":")[0]
        conv = "!r" if "!r" in m.group(1) else ""
        if field.isdigit() and int(field) < len(positional):
            names.append(positional[int(field)] + conv)
        elif field in keywords:
            names.append(keywords[field] + conv)
        elif not field and i < len(positional):
            names.append(positional[i] + conv)
        else:
            names.append((field or "value") + conv)
    return _BRACES.sub(SLOT, fmt.replace("{{", "{").replace("}}", "}")), names


def message_of(node: ast.Raise) -> tuple[str, list[str]] | None:
    """(format with SLOT where a value goes, the expressions of the values) of a raise."""
    exc = node.exc
    if not isinstance(exc, ast.Call) or not exc.args:
        return None
    arg = exc.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value, []
    if isinstance(arg, ast.JoinedStr):
        return _slots_of_fstring(arg)
    if (
        isinstance(arg, ast.BinOp)
        and isinstance(arg.op, ast.Mod)
        and isinstance(arg.left, ast.Constant)
        and isinstance(arg.left.value, str)
    ):
        return _slots_of_percent(arg.left.value, arg.right)
    if (
        isinstance(arg, ast.Call)
        and isinstance(arg.func, ast.Attribute)
        and arg.func.attr == "format"
        and isinstance(arg.func.value, ast.Constant)
        and isinstance(arg.func.value.value, str)
    ):
        return _slots_of_format(arg.func.value.value, arg)
    return None


def _usable(fmt: str) -> bool:
    """One line of prose of reasonable length: at least three words of letters."""
    if "\n" in fmt.strip() or not 12 <= len(fmt) <= 160:
        return False
    words = [w for w in fmt.replace(SLOT, " ").split() if re.search(r"[A-Za-z]{2,}", w)]
    return len(words) >= 3


def extract() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for module, dist in PACKAGES.items():
        version = importlib.metadata.version(dist)
        spec = importlib.util.find_spec(module)  # type: ignore[attr-defined]
        assert spec is not None and spec.submodule_search_locations
        root = Path(next(iter(spec.submodule_search_locations)))
        found: dict[str, dict[str, object]] = {}
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root.parent).as_posix()
            if "/tests/" in rel or "/test_" in rel:
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.Raise):
                    continue
                got = message_of(node)
                if got is None or not _usable(got[0]):
                    continue
                fmt = " ".join(got[0].split())
                fmt = fmt.replace("{", "{{").replace("}", "}}").replace(SLOT, "{}")
                found.setdefault(
                    fmt,
                    {
                        "package": dist,
                        "version": version,
                        "file": rel,
                        "line": node.lineno,
                        "format": fmt,
                        "slots": got[1],
                    },
                )
        # A deterministic sample, two thirds with values: formats without any are fewer to
        # tell apart than the ones that vary.
        ranked = sorted(found.values(), key=lambda r: _digest(str(r["format"])))
        with_slots = [r for r in ranked if r["slots"]][: PER_PACKAGE * 2 // 3]
        without = [r for r in ranked if not r["slots"]][: PER_PACKAGE - len(with_slots)]
        rows += sorted(with_slots + without, key=lambda r: (str(r["file"]), int(r["line"])))  # type: ignore[call-overload]
    return rows


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# Values -------------------------------------------------------------------------------
# What a slot holds is guessed from the expression its authors wrote there (`path`, `e`,
# `type(x).__name__`, `len(...)`); the pools are realistic values of that kind, several of
# them of more than one word.
ERRORS = [
    "No such file or directory",
    "Permission denied",
    "Connection refused",
    "[Errno 111] Connection refused",
    "[Errno 2] No such file or directory: 'settings.local.toml'",
    "Expecting value: line 1 column 1 (char 0)",
    "timed out",
    "Name or service not known",
    "certificate verify failed: unable to get local issuer certificate",
    "Broken pipe",
    "invalid literal for int() with base 10: 'abc'",
    "database is locked",
    "too many open files",
    "unexpected end of data",
    "Resource temporarily unavailable",
    "the connection was closed by the server",
]
PATHS = [
    "/var/lib/app/data.db",
    "/home/alice/Old Projects/api v2/config.yaml",
    "/etc/ssl/certs/ca-bundle.crt",
    "/tmp/tmpx8k2_q1/upload.bin",
    "C:\\Users\\Bob Smith\\Documents\\report 2026.csv",
    "/srv/www/static/img/logo.png",
    "./conf/logging.ini",
    "/home/bob/My Documents/invoices/march.pdf",
    "/opt/spark-4.0/conf/spark-defaults.conf",
    "/data/exports/orders-2026-11.parquet",
    "/Users/carol/Library/Application Support/tool/state.json",
    "/mnt/backup/db dumps/nightly.sql.gz",
]
URLS = [
    "https://api.example.com/v2/orders?page=3",
    "http://127.0.0.1:8888/v2/queues/orders",
    "https://s3.eu-west-1.amazonaws.com/bucket-7/key.txt",
    "http://localhost:5000/health",
    "https://identity.cloud.example.org:5000/v3/auth/tokens",
    "ftp://files.example.net/pub/data.tar.gz",
]
HOSTS = [
    "db-primary.internal",
    "10.0.3.17",
    "api.example.com",
    "localhost",
    "cache-02.eu-west-1.compute.internal",
    "192.168.1.254",
    "2001:db8::8a2e:370:7334",
    "mq.prod.example.org",
]
TYPES = [
    "int",
    "str",
    "NoneType",
    "dict",
    "bytes",
    "DataFrame",
    "Series",
    "Decimal",
    "datetime",
    "UUID",
    "list",
    "tuple",
    "Timestamp",
    "float",
    "Response",
    "PosixPath",
]
NAMES = [
    "customer_id",
    "order.total",
    "max_retries",
    "timeout",
    "region_name",
    "Content-Type",
    "x-amz-date",
    "user",
    "payload",
    "retry_mode",
    "endpoint_url",
    "sku",
    "created_at",
    "billing_address",
    "currency",
    "ssl_verify",
    "page_size",
    "shipping.method",
    "invoiceId",
    "ReturnConsumedCapacity",
    "status",
    "quantity",
    "discount_code",
    "tenant",
]
PHRASES = [
    "hello world",
    "N/A",
    "yes please",
    "not a number",
    "2026-11-25",
    "3.5",
    "-1",
    "",
    "true",
    "Lorem ipsum dolor",
    "null",
    "0x1F",
    "abc 12",
    "ÄÖÜ",
    "none of the above",
]
COMMANDS = [
    "gzip -dc",
    "tar -xzf backup.tar.gz",
    "git fetch origin",
    "pg_dump -Fc orders",
    "openssl x509 -noout -text",
    "sh -c 'make install'",
    "rsync -a src/ dst/",
    "unzip -o",
]
STATES = [
    "active",
    "error",
    "deleting",
    "available",
    "building",
    "shutoff",
    "in-use",
    "manageable",
    "deploy failed",
    "clean wait",
    "inspecting",
    "rescue",
]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]
PROGRAMS = [
    "useradd",
    "billing-worker",
    "sync-agent",
    "etl_nightly",
    "api-gateway",
    "invoice-renderer",
    "report-builder",
    "s3-uploader",
    "crond",
    "importer",
    "mailer",
    "thumbnailer",
    "ledger",
    "search-indexer",
]
# Share of formats written as `<program>: <message>`, the program varying per message.
PROGRAM_SHARE = 4
COUNTS = [2, 3, 4, 6, 10, 16, 25, 40]


def _kind(slot: str) -> str:
    s = slot.removesuffix("!r").removesuffix("!d").lower()
    rules = [
        (
            (
                "len(",
                "index",
                "size",
                "count",
                "num",
                "max",
                "min",
                "nargs",
                "width",
                "length",
                "level",
                "precision",
                "port",
                "bytes",
                " + ",
                " * ",
                " / ",
                "**",
                "remaining",
            ),
            "int",
        ),
        (("__name__", "__class__", "cls", "klass", "_type", "type("), "type"),
        (("join(",), "list"),
        (("url", "uri", "endpoint"), "url"),
        (("host", "address", "netloc", "ip"), "host"),
        (("path", "file", "dir", "filename", "root"), "path"),
        (("cmd", "command", "args", "argv"), "command"),
        (("state", "status"), "state"),
        (("method",), "method"),
        (("uuid", "_id", ".id", "ident"), "id"),
        (("value", "val", "string", "data", "content", "s", "item", "fragment"), "value"),
        (("err", "exc", "detail", "reason", "message", "msg", "str(e)"), "error"),
    ]
    if s in {"e", "ex", "exc", "err", "error", "str(e)"}:
        return "error"
    for keys, kind in rules:
        if any(k in s for k in keys):
            return kind
    return "name"


def _value(kind: str, rng: random.Random) -> str:
    if kind == "int":
        return str(rng.choice([0, 1, 2, 3, 7, 8, 16, 64, 255, 1024, 4096, 65535, -1]))
    if kind == "type":
        return rng.choice(TYPES)
    if kind == "list":
        return ", ".join(rng.sample(NAMES, rng.randint(2, 4)))
    if kind == "url":
        return rng.choice(URLS)
    if kind == "host":
        return rng.choice(HOSTS)
    if kind == "path":
        return rng.choice(PATHS)
    if kind == "command":
        return rng.choice(COMMANDS)
    if kind == "state":
        return rng.choice(STATES)
    if kind == "method":
        return rng.choice(METHODS)
    if kind == "id":
        return rng.choice(
            [
                str(uuid.UUID(int=rng.getrandbits(128))),
                f"{rng.randrange(16**8):08x}",
                f"i-{rng.randrange(10**6)}",
            ]
        )
    if kind == "error":
        return rng.choice(ERRORS)
    if kind == "value":
        return rng.choice(PHRASES + NAMES[:6] + [str(rng.randint(-5, 5000))])
    return rng.choice(NAMES)


_FIELD = re.compile(r"\{\}|\{\{|\}\}")


def fill(fmt: str, slots: list[str], rng: random.Random) -> str:
    """One message of a format: each slot a value of its kind (repr-quoted for `!r`)."""
    values = iter(slots)

    def one(match: re.Match[str]) -> str:
        if match.group(0) != "{}":
            return match.group(0)[0]
        slot = next(values, "value")
        value = _value(_kind(slot), rng)
        return repr(value) if slot.endswith("!r") else value

    return _FIELD.sub(one, fmt)


def read_formats() -> list[dict[str, object]]:
    with DATA.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def label_of(row: dict[str, object]) -> str:
    return f"{row['package']}:{row['file']}:{row['line']}"


def half_of(row: dict[str, object]) -> str:
    """`tuning` or `held-out`, by a hash of the format: a format's messages stay together."""
    return "tuning" if int(_digest(label_of(row)), 16) % 2 == 0 else "held-out"


def generate(half: str, seed: int = 1) -> dict[str, tuple[list[str], list[str]]]:
    """Per package (a queue), the messages of the half's formats and each one's format label.

    Deterministic: each format has its own random generator, seeded by the seed and the
    format's label, so adding a format leaves the others' messages as they were.
    """
    out: dict[str, tuple[list[str], list[str]]] = {}
    for row in read_formats():
        if half_of(row) != half:
            continue
        label = label_of(row)
        rng = random.Random(f"{seed}:{label}")
        prefixed = int(_digest(f"program:{label}"), 16) % PROGRAM_SHARE == 0
        messages, labels = out.setdefault(str(row["package"]), ([], []))
        for _ in range(rng.choice(COUNTS)):
            message = fill(str(row["format"]), list(row["slots"]), rng)  # type: ignore[call-overload]
            if prefixed:
                message = f"{rng.choice(PROGRAMS)}: {message}"
            messages.append(message)
            labels.append(label)
    # Messages of one queue arrive interleaved, not format by format.
    for package, (messages, labels) in out.items():
        order = list(range(len(messages)))
        random.Random(f"{seed}:{package}").shuffle(order)
        out[package] = ([messages[i] for i in order], [labels[i] for i in order])
    return dict(sorted(out.items()))


def main(argv: list[str]) -> int:
    if argv[:1] == ["extract"]:
        rows = extract()
        DATA.parent.mkdir(parents=True, exist_ok=True)
        with DATA.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{len(rows)} formats written to {DATA}")
        return 0
    if argv[:1] == ["show"]:
        for package, (messages, labels) in generate(argv[1] if len(argv) > 1 else "tuning").items():
            for message, label in zip(messages, labels, strict=True):
                print(f"{package}\t{label}\t{message}")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
