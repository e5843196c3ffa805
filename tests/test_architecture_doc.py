"""docs/architecture.md against the code: its picture names every module under
src/deadletter and none that is gone, draws no layer above one it imports, and its layer
table says what each layer may import as tests/test_layers.py enforces it.

Names in the doc are paths under src/deadletter (`engine/claims.py`, `api/zaqar/`), or many
at once as `engine/{claims, expiry}.py`; prose elsewhere may use a bare `claims.py`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_layers import PACKAGE, ROOT, RULES, Import, Rule, import_graph

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
SOURCE = ROOT / PACKAGE

# Names and commas only; a picture's margin (│) may run through the lines of a list.
BRACES = re.compile(r"((?:[a-z_]\w*/)*)\{([\w,\s│]*)\}\.py")
PATH = re.compile(r"(?<![\w/.\-])((?:[a-z_]\w*/)+(?:[a-z_]\w*\.py)?|[a-z_]\w*\.py)(?![\w/])")


def picture(doc: str) -> str:
    """The first fenced block of the doc: the layer picture."""
    match = re.search(r"^```\n(.*?)^```", doc, re.S | re.M)
    assert match, "docs/architecture.md has no picture"
    return match.group(1)


def names(text: str) -> list[tuple[str, int]]:
    """Every path the text names, with the number of the line it starts on."""
    found: list[tuple[str, int]] = []

    def expand(m: re.Match[str]) -> str:
        for n in re.finditer(r"\w+", m.group(2)):
            found.append(
                (f"{m.group(1)}{n.group()}.py", text.count("\n", 0, m.start(2) + n.start()))
            )
        return re.sub(r"[^\n]", " ", m.group(0))  # keep the line numbers of what follows

    rest = BRACES.sub(expand, text)
    found += [(m.group(1), rest.count("\n", 0, m.start())) for m in PATH.finditer(rest)]
    return found


def modules(source: Path = SOURCE) -> set[str]:
    """Every module as a path under the package, and every package as its folder."""
    out = set()
    for path in source.rglob("*.py"):
        relative = path.relative_to(source)
        if relative == Path("__init__.py"):
            continue  # the package itself
        out.add(f"{relative.parent}/" if path.name == "__init__.py" else str(relative))
    return out


def left_out(present: set[str], drawn: set[str]) -> set[str]:
    """The modules not drawn, and the packages with nothing drawn in them or as themselves."""
    return {
        m for m in present - drawn if not (m.endswith("/") and any(d.startswith(m) for d in drawn))
    }


def exists(name: str, source: Path = SOURCE) -> bool:
    return (source / name).is_dir() if name.endswith("/") else (source / name).is_file()


def unit(name: str) -> str:
    """The top-level part of the package a path or module belongs to."""
    return name.removeprefix(PACKAGE + ".").split("/")[0].split(".")[0].removesuffix(".py")


def rows(drawing: str) -> dict[str, int]:
    """Each top-level part's highest line in the picture."""
    out: dict[str, int] = {}
    for name, line in names(drawing):
        out[unit(name)] = min(line, out.get(unit(name), line))
    return out


def upward(drawing: str, imports: list[Import], rules: dict[str, Rule]) -> list[str]:
    """The imports, and the imports the rules allow, that the picture draws pointing up."""
    at = rows(drawing)
    pairs = {(unit(i.source), unit(i.target), str(i)) for i in imports}
    pairs |= {
        (unit(r.layer), unit(a), f"{r.layer} may import {a}")
        for r in rules.values()
        for a in r.allowed or ()
    }
    return sorted(
        why
        for source, target, why in pairs
        if source != target and source in at and target in at and at[target] < at[source]
    )


def table(doc: str) -> list[list[str]]:
    """The rows of the layer table (the one whose last column is `may import`)."""
    lines = doc[doc.index("| layer |") :].split("\n\n")[0].splitlines()
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


def dotted(name: str) -> str:
    return ".".join([PACKAGE, *name.removesuffix("/").removesuffix(".py").split("/")])


def claimed(cell: str) -> tuple[str, frozenset[str]]:
    """What a `may import` cell says: ("only" | "anything but" | "anything", modules)."""
    said = frozenset(dotted(n) for n in re.findall(r"`([^`]+(?:/|\.py))`", cell))
    for kind in ("only", "anything but", "anything"):
        if cell.startswith(kind):
            return kind, said
    raise AssertionError(f"a `may import` cell the test cannot read: {cell!r}")


def enforced(rule: Rule | None) -> tuple[str, frozenset[str]]:
    if rule is None:
        return "anything", frozenset()
    if rule.allowed is not None:
        return "only", frozenset(rule.allowed)
    return "anything but", frozenset(rule.forbidden)


def rule_of(name: str) -> Rule | None:
    """The rule over a path (`engine/`, `storage/base.py`); the innermost one."""
    module = dotted(name)
    over = [r for r in RULES.values() if module == r.layer or module.startswith(r.layer + ".")]
    return max(over, key=lambda r: len(r.layer), default=None)


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text()


def test_the_picture_names_every_module_and_package(doc: str) -> None:
    missing = sorted(left_out(modules(), {name for name, _ in names(picture(doc))}))
    assert not missing, "docs/architecture.md's picture leaves out:\n" + "\n".join(
        f"  {m}" for m in missing
    )


def test_every_path_the_picture_names_exists(doc: str) -> None:
    gone = sorted({name for name, _ in names(picture(doc)) if not exists(name)})
    assert not gone, "docs/architecture.md's picture names what does not exist:\n" + "\n".join(
        f"  {m}" for m in gone
    )


def test_every_module_the_doc_names_exists(doc: str) -> None:
    """Paths in the package's folders exist; a bare `name.py` is some module's name."""
    tops = {p.name for p in SOURCE.iterdir()}
    bare = {Path(m).name for m in modules()}
    gone = sorted(
        {
            name
            for name, _ in names(doc.replace("src/deadletter/", ""))
            if ("/" in name and name.split("/")[0] in tops and not exists(name))
            or ("/" not in name and name not in bare)
        }
    )
    assert not gone, "docs/architecture.md names what does not exist:\n" + "\n".join(
        f"  {m}" for m in gone
    )


def test_the_picture_draws_every_import_downwards(doc: str) -> None:
    up = upward(picture(doc), import_graph()[1], RULES)
    assert not up, "docs/architecture.md's picture draws these imports upwards:\n" + "\n".join(
        f"  {i}" for i in up
    )


def test_the_layer_table_says_what_test_layers_enforces(doc: str) -> None:
    wrong = []
    for row in table(doc):
        layer, folders, may_import = row[0], row[1], row[-1]
        for folder in re.findall(r"`([^`]+)`", folders):
            if enforced(rule_of(folder)) != claimed(may_import):
                wrong.append(
                    f"  {layer} ({folder}): {may_import!r}, enforced {enforced(rule_of(folder))}"
                )
    assert not wrong, "docs/architecture.md's layer table:\n" + "\n".join(wrong)


def test_the_layer_table_covers_every_layer(doc: str) -> None:
    listed = {f for row in table(doc) for f in re.findall(r"`([^`]+)`", row[1])}
    assert {m for m in modules() if m.count("/") == 1 and m.endswith("/")} | {
        m for m in modules() if "/" not in m
    } <= listed


# The checks themselves, on made-up docs and graphs.


def test_names_are_read_from_braces_paths_and_bare_names() -> None:
    text = "  engine/{claims,\n     expiry}.py ─► storage/\n  see `queries.py`, tests/x/test_y.py\n"
    assert sorted(names(text)) == [
        ("engine/claims.py", 0),
        ("engine/expiry.py", 1),
        ("queries.py", 2),
        ("storage/", 1),
        ("tests/x/test_y.py", 2),
    ]


def test_a_module_left_out_or_gone_is_reported(tmp_path: Path) -> None:
    for path in ("engine/__init__.py", "engine/claims.py", "engine/groups.py", "clock.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    drawn = {n for n, _ in names("engine/{claims, tag_claims}.py\nclock.py\n")}
    assert left_out(modules(tmp_path), drawn) == {"engine/groups.py"}
    assert left_out(modules(tmp_path), {"clock.py"}) == {
        "engine/",
        "engine/claims.py",
        "engine/groups.py",
    }
    assert [n for n in sorted(drawn) if not exists(n, tmp_path)] == ["engine/tag_claims.py"]


def test_an_import_drawn_upwards_is_reported() -> None:
    drawing = "api/app.py\nengine/engine.py\nstorage/base.py\ndomain/model.py\n"
    graph = [
        Import("deadletter.api.app", "deadletter.engine.engine", 1),
        Import("deadletter.storage.base", "deadletter.engine.ids", 2),
    ]
    rules = {"domain": Rule("deadletter.domain", allowed=("deadletter.api",))}
    assert upward(drawing, graph, rules) == [
        "deadletter.domain may import deadletter.api",
        "deadletter.storage.base:2 imports deadletter.engine.ids",
    ]


def test_a_may_import_cell_is_read_as_a_rule() -> None:
    assert claimed("only `domain/`, `storage/base.py`") == (
        "only",
        frozenset({"deadletter.domain", "deadletter.storage.base"}),
    )
    assert claimed("anything but `api/`, `server.py`") == (
        "anything but",
        frozenset({"deadletter.api", "deadletter.server"}),
    )
    assert enforced(RULES["cli"]) == claimed(
        "anything but `api/`, `engine/`, `storage/`, `server.py`, `config.py`"
    )
    assert enforced(RULES["engine"]) != claimed("only `domain/`, `auth/`, `clock.py`")
    assert rule_of("storage/base.py") is RULES["storage"]
    assert rule_of("server.py") is None


def folders_in_map(readme: str) -> set[str]:
    """The folders the README's map of the code names, as paths: a line's indent says which
    folder it is in (two spaces a level)."""
    block = readme[readme.index("## The code") :]
    block = block[block.index("```text\n") + len("```text\n") :]
    path: list[str] = []
    found = set()
    for line in block[: block.index("```")].splitlines():
        name = line.split()[0] if line.strip() else ""
        if not name.endswith("/"):
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        path = [*path[:depth], name.removesuffix("/")]
        found.add("/".join(path) + "/")
    return found


def test_the_readme_maps_every_folder_of_the_code() -> None:
    readme = (DOC.parent.parent / "README.md").read_text()
    folders = {f"src/deadletter/{m.rpartition('/')[0]}/" for m in modules() if "/" in m}
    assert folders <= folders_in_map(readme), sorted(folders - folders_in_map(readme))


def test_the_map_reads_nested_folders_by_indent() -> None:
    readme = "## The code\n```text\nsrc/\n  a/     x\n    b/   y\n  c.py   z\n  d/\ndocs/\n```\n"
    assert folders_in_map(readme) == {"src/", "src/a/", "src/a/b/", "src/d/", "docs/"}


# What the doc says of migrations and of threads, against the migration folders and the
# faces' tables.

MIGRATIONS = {d: SOURCE / "storage" / d / "migrations" for d in ("sqlite", "postgres")}


def numbered(dialect: str) -> dict[str, str]:
    """A dialect's migrations: number -> SQL text."""
    return {p.name[:4]: p.read_text() for p in sorted(MIGRATIONS[dialect].glob("[0-9]*.sql"))}


def prose(doc: str) -> str:
    """The doc with its lines joined and its lists' indents gone, as one paragraph."""
    return re.sub(r"\s+", " ", doc)


def test_the_doc_names_the_numbers_only_one_dialect_has(doc: str) -> None:
    said = re.search(r"SQLite alone has ([\d, and]+), PostgreSQL alone ([\d, and]+)\)", prose(doc))
    assert said, "docs/architecture.md no longer says which numbers one dialect alone has"
    sqlite, postgres = set(numbered("sqlite")), set(numbered("postgres"))
    assert set(re.findall(r"\d{4}", said.group(1))) == sqlite - postgres
    assert set(re.findall(r"\d{4}", said.group(2))) == postgres - sqlite


def added_by(sql: str, table: str, column: str | None) -> bool:
    """Whether `sql` creates `table` (with `column`, if named) or adds `column` to it."""
    created = re.search(rf"CREATE TABLE {table} \((.*?)\n\);", sql, re.S)
    if column is None:
        return created is not None
    if created and re.search(rf"^\s*{column}\b", created.group(1), re.M):
        return True
    return re.search(rf"ALTER TABLE {table} ADD COLUMN {column}\b", sql) is not None


def migration_claims(doc: str) -> list[tuple[str, str, str | None]]:
    """(number, table, column or None) for each "(`table.column`, migration NNNN)" and
    "(`table` table, migration NNNN)" the doc writes."""
    claims = []
    for group in re.findall(r"\(([^()]*migration \d{4}[^()]*)\)", prose(doc)):
        for clause in group.split(";"):
            number = re.search(r"migration (\d{4})", clause)
            if number is None:
                continue
            for table, column in re.findall(r"`([a-z_]+)\.([a-z_]+)`", clause):
                claims.append((number.group(1), table, column))
            for table in re.findall(r"`([a-z_]+)` table", clause):
                claims.append((number.group(1), table, None))
    return claims


def test_each_column_the_doc_dates_was_added_by_that_migration_in_both_dialects(
    doc: str,
) -> None:
    claims = migration_claims(doc)
    assert len(claims) >= 4, claims
    wrong = [
        f"{number}: {table}.{column or ''} in {dialect}"
        for number, table, column in claims
        for dialect in MIGRATIONS
        if not added_by(numbered(dialect).get(number, ""), table, column)
    ]
    assert wrong == []


def test_a_migration_claim_is_read_per_clause() -> None:
    doc = (
        "when (`messages.x`, migration 0006; a tag's `tags.y`, migration 0015)"
        " and (`t` table,\n migration 0011)"
    )
    assert migration_claims(doc) == [
        ("0006", "messages", "x"),
        ("0015", "tags", "y"),
        ("0011", "t", None),
    ]
    sql = "CREATE TABLE t (\n    a INTEGER,\n    b TEXT\n);\nALTER TABLE u ADD COLUMN c REAL;\n"
    assert added_by(sql, "t", "b") and added_by(sql, "u", "c") and added_by(sql, "t", None)
    assert not added_by(sql, "t", "c") and not added_by(sql, "u", None)


def named_in(doc: str, where: str) -> set[str]:
    """The backquoted names in the parentheses that follow `where` in the doc."""
    found = re.search(re.escape(where) + r" \(([^()]*)\)", prose(doc))
    assert found, f"docs/architecture.md no longer lists {where}"
    return set(re.findall(r"`(\w+)`", found.group(1)))


def test_the_doc_names_the_handlers_that_run_on_the_loop(doc: str) -> None:
    """The rest run in a worker thread (`in_thread`); the doc says which are which."""
    from deadletter.api.sqs.actions import OPERATIONS
    from deadletter.api.zaqar.routes import ROUTES

    hot = {r.name for r in ROUTES if r.hot}
    assert named_in(doc, "the routes marked `hot` in `api/zaqar/routes.py`") == hot
    bounded = {op.name for op in OPERATIONS.values() if op.bounded}
    assert named_in(doc, "the actions marked `bounded` in `api/sqs/actions.py`") == bounded
    coroutines = {op.name for op in OPERATIONS.values() if op.is_async}
    assert set(re.findall(r"the claims of `(\w+)`, a coroutine", prose(doc))) == coroutines
