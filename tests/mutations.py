"""Single-line mutations of the dead-letter rules, the auth checks and validation that the
suite must catch, and the tool that applies them one at a time and runs the tests named for
each (not collected by pytest: the name has no `test_` prefix).

Each mutation is applied to a copy of `src/` in a temporary directory, never in place, so an
interrupted run leaves the checkout untouched; the tests then run with PYTHONPATH pointing at
the copy. A mutation is caught when one of its test files fails; the first failing test is
recorded. Store-independent by default (`-m "not postgres"`): the SQL under test is one text
for both dialects. `--all-stores` runs the PostgreSQL parameters too.

    PYTHONPATH=src python tests/mutations.py             # every mutation, a table at the end
    PYTHONPATH=src python tests/mutations.py fifo-earlier-hidden role-case-folding
    PYTHONPATH=src python tests/mutations.py --list      # names and lines, nothing run
    PYTHONPATH=src python tests/mutations.py --baseline  # the named tests pass unmutated

The list and what catches each is kept in tests/README.md ("Mutations the suite must catch").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "deadletter"


@dataclass(frozen=True)
class Mutation:
    """`original` (one line of `file`, compared without its indentation, found exactly once)
    becomes `mutated` (indented as the original; empty: the line is removed)."""

    name: str
    file: str  # under src/deadletter
    original: str
    mutated: str
    tests: tuple[str, ...]
    breaks: str  # the rule the mutation breaks, in a few words


MUTATIONS: tuple[Mutation, ...] = (
    # Dead-letter rules
    Mutation(
        "max-claims-off-by-one",
        "engine/transitions.py",
        "return policy is not None and policy.active and m.claim_count >= policy.max_claims",
        "return policy is not None and policy.active and m.claim_count > policy.max_claims",
        ("tests/engine/test_dead_letter.py",),
        "a message moves to the DLQ after max_claims deliveries, not one more",
    ),
    Mutation(
        "lapsed-last-claim-reason",
        "engine/expiry.py",
        "tx, pending, group, messages=spent, reason=Reason.MAX_CLAIMS, now=now",
        "tx, pending, group, messages=spent, reason=Reason.EXPIRED, now=now",
        (
            "tests/engine/test_dead_letter.py",
            "tests/engine/test_worker.py",
            "tests/engine/test_expiry.py",
            "tests/engine/test_lapsed_last_claims.py",
        ),
        "a lapsed last claim is swept as max_claims, not as an expiry",
    ),
    Mutation(
        "expiry-dead-letter-reason",
        "engine/expiry.py",
        "tx, pending, group, messages=to_dlq, reason=Reason.EXPIRED, now=now",
        "tx, pending, group, messages=to_dlq, reason=Reason.MAX_CLAIMS, now=now",
        ("tests/engine/test_expiry.py",),
        "an expired message dead-lettered on expiry says so",
    ),
    Mutation(
        "expiry-dead-letter-ignores-on-expiry",
        "engine/transitions.py",
        "if policy is None or not policy.active or not policy.on_expiry:",
        "if policy is None or not policy.active:",
        ("tests/engine/test_expiry.py",),
        "expired messages reach the DLQ only when the policy asks (on_expiry)",
    ),
    Mutation(
        "redrive-filter-reason-ignored",
        "storage/sql/queries.py",
        '" AND (dl_reason = :dl_reason OR :dl_reason IS NULL)"',
        '" AND (1 = 1)"',
        ("tests/engine/test_redrive.py", "tests/engine/test_dead_letter.py"),
        "dead letters chosen by reason (browsed, redriven) are of that reason only",
    ),
    Mutation(
        "filter-attribute-value-ignored",
        "engine/selection.py",
        "if found is None or (value is not None and found.value != value):",
        "if found is None:",
        ("tests/api/zaqar/test_dead_letter_filters.py",),
        "a dead-letter filter by attribute value selects that value only",
    ),
    Mutation(
        "filter-redrive-stops-at-an-unselected-page",
        "engine/redrive.py",
        "return (task, [], None, True) if short else (task, [], last_seq, False)",
        "return task, [], None, True",
        ("tests/api/zaqar/test_dead_letter_filters.py",),
        "a filtered redrive reads past a page it selects nothing of, and goes on",
    ),
    Mutation(
        "filter-blank-only-when-empty",
        "domain/filters.py",
        "if blank(value):",
        'if value == "":',
        ("tests/api/zaqar/test_blank_filters.py",),
        "a filter value of spaces, U+3000 or invisible characters alone is refused, not only an"
        " empty one",
    ),
    Mutation(
        "client-drops-an-empty-filter",
        "client/__init__.py",
        "if one is not None:",
        'if one is not None and one != "":',
        ("tests/api/zaqar/test_blank_filters.py",),
        "the client sends an empty filter value on (dropped, a purge would take the whole DLQ)",
    ),
    Mutation(
        "sqs-empty-move-filter-moves-everything",
        "api/sqs/move_tasks.py",
        "if filters.blank(text):",
        "if False:",
        ("tests/api/sqs/test_move_task_filter.py",),
        "a blank DeadLetterFilter is refused, not taken as no filter",
    ),
    Mutation(
        "redrive-into-a-dlq",
        "engine/redrive.py",
        "if destination in tx.dead_letter_targets(project):",
        "if destination in tx.dead_letter_targets(project) and destination == dlq:",
        ("tests/engine/test_redrive.py", "tests/engine/test_redrive_outcomes.py"),
        "a redrive may not move dead letters into another DLQ (no chains)",
    ),
    Mutation(
        "chain-target-has-policy",
        "engine/validation.py",
        "if routing.active_targets(target.settings):",
        "if target.settings.dead_letter and target.settings.dead_letter.on_expiry:",
        (
            "tests/engine/test_queues.py",
            "tests/api/zaqar/test_queues.py",
            "tests/engine/test_group_policy_rules.py",
        ),
        "a DLQ may not have a dead-letter policy of its own (no chains)",
    ),
    Mutation(
        "chain-source-is-a-dlq",
        "engine/validation.py",
        "if name in tx.dead_letter_targets(project):",
        "if name in tx.dead_letter_targets(project) and name == found[0].name:",
        (
            "tests/engine/test_queues.py",
            "tests/api/zaqar/test_queues.py",
            "tests/engine/test_group_policy_rules.py",
        ),
        "a queue that is some queue's DLQ may not get a policy (no chains)",
    ),
    Mutation(
        "cycle-own-dlq",
        "engine/validation.py",
        "if found.name == name:",
        "if found.name == name and s.dead_letter_default:",
        (
            "tests/engine/test_queues.py",
            "tests/api/zaqar/test_queues.py",
            "tests/engine/test_group_policy_rules.py",
        ),
        "a queue may not be its own DLQ (no cycles)",
    ),
    Mutation(
        "fifo-earlier-hidden",
        "storage/sql/fifo_queries.py",
        '" AND (o.seq < m.seq OR o.claim_id IS NOT NULL))"',
        '" AND (o.claim_id IS NOT NULL))"',
        (
            "tests/engine/test_fifo.py",
            "tests/api/sqs/test_fifo.py",
            "tests/engine/test_fifo_release_blocking.py",
        ),
        "a FIFO group waits while an earlier message is hidden (given back with a delay)",
    ),
    Mutation(
        "fifo-later-in-flight",
        "storage/sql/fifo_queries.py",
        '" AND (o.seq < m.seq OR o.claim_id IS NOT NULL))"',
        '" AND (o.seq < m.seq))"',
        ("tests/engine/test_fifo.py",),
        "a FIFO group waits while any message a receive handed out is in flight",
    ),
    Mutation(
        "tag-dead-letter-ends-every-group",
        "engine/groups.py",
        "if source.settings.consumer_tags and reason not in ENDS_FOR_EVERY_GROUP:",
        "if source.settings.consumer_tags:",
        ("tests/engine/test_consumer_tags.py", "tests/engine/test_consumer_tags_endings.py"),
        "an expiry ends a message for every consumer group, not only the default one",
    ),
    Mutation(
        "tag-only-tag-ignored",
        "domain/tags.py",
        "if m.only_tag is not None and m.only_tag != self.name:",
        "if m.only_tag is not None and m.only_tag == self.name and False:",
        ("tests/engine/test_consumer_tags.py", "tests/engine/test_transitions.py"),
        "a message redriven to one tag is delivered to that tag only",
    ),
    Mutation(
        "route-by-reason-ignored",
        "domain/routing.py",
        "route = s.dead_letter_routes.get(reason.value)",
        "route = None",
        ("tests/engine/test_group_policies.py",),
        "a dead letter of a routed reason goes to its route's DLQ, not the queue's",
    ),
    Mutation(
        "tag-own-dlq-ignored",
        "domain/routing.py",
        "target = own.dead_letter_queue or (policy.target if policy else None)",
        "target = policy.target if policy else own.dead_letter_queue",
        ("tests/engine/test_group_policies.py",),
        "a tag with a DLQ of its own dead-letters there, not to the queue's DLQ",
    ),
    Mutation(
        "chain-over-tag-routes",
        "domain/routing.py",
        'found.append(Target("tag", tag, own.dead_letter_queue, own.active))',
        "pass",
        ("tests/engine/test_group_policy_rules.py",),
        "the no-chain rules hold for a consumer tag's own DLQ",
    ),
    # Auth checks
    # The loosened parser in one line: any letters matched, then compared by `.upper()` (the
    # walrus folds `text` before the comparison below it): a dotless i (U+0131) in admin, or
    # a long s (U+017F) in consumer, then names the role.
    Mutation(
        "auto-redrive-cap-off-by-one",
        "engine/selection.py",
        "if cap is not None and auto_rounds(m.history) >= cap:",
        "if cap is not None and auto_rounds(m.history) > cap:",
        ("tests/engine/test_auto_redrive.py",),
        "automatic redrive sends a dead letter back at most max_rounds times",
    ),
    Mutation(
        "role-case-folding",
        "auth/roles.py",
        "if isinstance(text, str) and _CHOICE.fullmatch(text):",
        r'if isinstance(text, str) and re.fullmatch(r"[^\W\d_][\w-]*", text)'
        " and (text := text.upper()):",
        (
            "tests/auth/test_roles.py",
            "tests/auth/test_credentials.py",
            "tests/auth/test_role_spellings.py",
        ),
        "a role is spelled in ASCII letters; Unicode case-folding look-alikes are refused",
    ),
    Mutation(
        "role-table-producer-claims",
        "auth/roles.py",
        "Role.PRODUCER: _LOOKUP | {Action.MESSAGE_SEND},",
        "Role.PRODUCER: _LOOKUP | {Action.MESSAGE_SEND, Action.MESSAGE_CLAIM},",
        ("tests/auth/test_roles.py", "tests/api/test_auth_zaqar.py"),
        "a producer sends and never claims",
    ),
    Mutation(
        "role-table-admin-server-wide",
        "auth/roles.py",
        "Role.ADMIN: frozenset(Action) - SERVER_ACTIONS,",
        "Role.ADMIN: frozenset(Action),",
        ("tests/auth/test_roles.py", "tests/api/test_auth_zaqar.py"),
        "a project's admin may not use the server's own endpoints",
    ),
    Mutation(
        "project-isolation-admin",
        "auth/roles.py",
        "if role is not Role.OPERATOR and own_project != target_project:",
        "if role not in (Role.OPERATOR, Role.ADMIN) and own_project != target_project:",
        ("tests/auth/test_roles.py", "tests/api/test_auth_isolation.py"),
        "only the operator acts in another project",
    ),
    Mutation(
        "metrics-admin-every-project",
        "api/auth.py",
        "project = credential.project",
        "project = None",
        ("tests/api/test_auth_adversarial.py",),
        "a project's admin sees its own project's metrics only",
    ),
    Mutation(
        "route-row-action-ignored",
        "api/zaqar/context.py",
        "action=action_for(params),",
        "action=None,",
        ("tests/api/test_route_table.py",),
        "each Zaqar request needs the action its route's row names",
    ),
    Mutation(
        "sqs-action-permission-ignored",
        "api/sqs/routes.py",
        "permission = operation.permission if operation is not None else None",
        "permission = None",
        ("tests/api/test_auth_sqs.py",),
        "each SQS action needs the permission its row names",
    ),
    Mutation(
        "sigv4-signature-prefix",
        "auth/sigv4.py",
        "if not hmac.compare_digest(expected.encode(), parsed.signature.encode()):",
        "if not hmac.compare_digest(expected[:8].encode(), parsed.signature[:8].encode()):",
        ("tests/auth/test_sigv4.py",),
        "the whole SigV4 signature must match",
    ),
    Mutation(
        "sigv4-payload-hash-unchecked",
        "auth/sigv4.py",
        "if not hmac.compare_digest(stated.lower().encode(), actual.encode()):",
        "if not hmac.compare_digest(stated.lower().encode(), stated.lower().encode()):",
        ("tests/auth/test_sigv4.py", "tests/api/test_auth_sqs.py"),
        "a stated payload hash is checked against the body",
    ),
    Mutation(
        "sigv4-presigned-expiry",
        "auth/sigv4.py",
        "if now > at + parsed.expires:",
        "if now > at + 2 * parsed.expires:",
        ("tests/auth/test_sigv4.py", "tests/api/test_auth_adversarial.py"),
        "a presigned URL is refused once X-Amz-Expires has passed",
    ),
    Mutation(
        "signed-url-path-prefix",
        "auth/signed_urls.py",
        'if not any(path == p or path.startswith(p.rstrip("/") + "/") for p in paths):',
        'if not any(path == p or path.startswith(p.rstrip("/")) for p in paths):',
        ("tests/auth/test_signed_urls.py",),
        "a signed URL for /queues/a does not cover /queues/ab",
    ),
    Mutation(
        "signed-url-project-unsigned",
        "auth/signed_urls.py",
        "expected = _sign(key, paths, methods, project, when.strftime(DATE_FORMAT))",
        'expected = _sign(key, paths, methods, "", when.strftime(DATE_FORMAT))',
        ("tests/auth/test_signed_urls.py",),
        "a signed URL's project is signed",
    ),
    Mutation(
        "webhook-loopback-label",
        "engine/destinations.py",
        '("loopback", ip.is_loopback),',
        "",
        ("tests/engine/test_webhook_destinations.py", "tests/engine/test_address_kinds.py"),
        "loopback addresses are refused as loopback (the kind a refusal names)",
    ),
    Mutation(
        "webhook-unspecified-label",
        "engine/destinations.py",
        '("unspecified", ip.is_unspecified),',
        "",
        ("tests/engine/test_webhook_destinations.py", "tests/engine/test_address_kinds.py"),
        "0.0.0.0 and :: are refused as unspecified",
    ),
    # Validation
    Mutation(
        "zaqar-queue-name-length",
        "domain/names.py",
        'QUEUE = _kind("queue name", f"1 to 64 {_WORD}", r"[a-zA-Z0-9_-]{1,64}")',
        'QUEUE = _kind("queue name", f"1 to 64 {_WORD}", r"[a-zA-Z0-9_-]{1,65}")',
        ("tests/api/zaqar/test_queues.py",),
        "Zaqar queue names are at most 64 characters",
    ),
    Mutation(
        "sqs-fifo-name-length",
        "domain/names.py",
        'r"[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\\.fifo",',
        'r"[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,80}\\.fifo",',
        (
            "tests/api/sqs/test_queues.py",
            "tests/api/sqs/test_fifo.py",
            "tests/api/sqs/test_queue_name_lengths.py",
        ),
        "an SQS FIFO queue name, .fifo included, is at most 80 characters",
    ),
    Mutation(
        "sqs-standard-name-length",
        "domain/names.py",
        'r"[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\\.fifo",',
        'r"[A-Za-z0-9_-]{1,81}|[A-Za-z0-9_-]{1,75}\\.fifo",',
        ("tests/api/sqs/test_queues.py", "tests/api/sqs/test_queue_name_lengths.py"),
        "an SQS queue name is at most 80 characters",
    ),
    Mutation(
        "setting-range-booleans",
        "engine/validation.py",
        "if isinstance(value, bool) or not isinstance(value, int | float)"
        " or not low <= value <= high:",
        "if not isinstance(value, int | float) or not low <= value <= high:",
        ("tests/api/test_setting_ranges.py", "tests/engine/test_setting_types.py"),
        "true is not a number of seconds or claims",
    ),
    Mutation(
        "claim-limit-zero",
        "engine/validation.py",
        'check_range("claim limit", limit, 1, MAX_CLAIM_LIMIT)',
        'check_range("claim limit", limit, 0, MAX_CLAIM_LIMIT)',
        ("tests/engine/test_claims.py", "tests/api/test_setting_ranges.py"),
        "a claim takes at least one message",
    ),
    Mutation(
        "message-size-without-attributes",
        "engine/validation.py",
        "if size > s.max_message_size:",
        "if len(new.body) > s.max_message_size:",
        (
            "tests/engine/test_messages.py",
            "tests/api/sqs/test_messages.py",
            "tests/engine/test_message_size.py",
        ),
        "a message's size counts its attributes",
    ),
    Mutation(
        "body-limit-chunked",
        "api/limits.py",
        "if seen > limit:",
        "if seen > 2 * limit:",
        ("tests/api/test_limits.py", "tests/api/test_limits_chunked.py"),
        "a chunked body is refused as soon as it passes the limit",
    ),
    Mutation(
        "body-limit-chunked-at-limit",
        "api/limits.py",
        "if seen > limit:",
        "if seen >= limit:",
        ("tests/api/test_limits.py", "tests/api/test_limits_chunked.py"),
        "a chunked body of exactly the limit passes",
    ),
    Mutation(
        "canary-draw-ignores-kinds",
        "engine/canary.py",
        'return "pattern", profiles',
        'return "pattern", {mid: () for mid in profiles}',
        ("tests/engine/test_canary_kinds.py",),
        "a canary over a pattern samples every value of its variables, a minority one too",
    ),
    Mutation(
        "canary-impure-unforced",
        "engine/canary.py",
        "if pattern is not None and not canary.force and impure(pattern):",
        "if pattern is not None and canary.force and impure(pattern):",
        ("tests/engine/test_canary_kinds.py",),
        "a pattern flagged impure is refused a canary unless forced",
    ),
    Mutation(
        "archive-keeps-too-long",
        "storage/sql/group_queries.py",
        '"SELECT * FROM archived_dead_letters WHERE keep_until <= :now"',
        '"SELECT * FROM archived_dead_letters WHERE keep_until <= :now - 86400"',
        ("tests/engine/test_failure_groups.py",),
        "an archive's retention ends when it says, and the sweep deletes then",
    ),
    Mutation(
        "restore-ignores-selection",
        "engine/failure_groups.py",
        "picked = [a.message for a in page if selection.holds(a.message, resolved)]",
        "picked = [a.message for a in page]",
        ("tests/engine/test_failure_groups.py",),
        "a restore brings back only what its selection holds",
    ),
    Mutation(
        "follow-any-task",
        "storage/sql/failure_groups.py",
        """"pattern": f'%"{text}"%'}  # fmt: skip""",
        """"pattern": '%"redriven"%'}  # fmt: skip""",
        ("tests/engine/test_failure_groups.py",),
        "a retried group is followed by its own task's id",
    ),
)


@dataclass
class Outcome:
    mutation: Mutation
    line: int
    verdict: str  # caught, SURVIVED, error
    first_failure: str
    seconds: float


def locate(m: Mutation, text: str) -> int:
    """The 1-based line of `m.original` in `text`; ValueError unless it is there exactly once."""
    lines = [i for i, line in enumerate(text.splitlines(), 1) if line.strip() == m.original]
    if len(lines) != 1:
        raise ValueError(f"{m.name}: {m.file} has {len(lines)} lines {m.original!r}")
    return lines[0]


def mutate(m: Mutation, text: str) -> str:
    lines = text.splitlines(keepends=True)
    i = locate(m, text) - 1
    old = lines[i]
    indent = old[: len(old) - len(old.lstrip())]
    lines[i] = indent + m.mutated + "\n" if m.mutated else ""
    return "".join(lines)


def pytest_command(tests: tuple[str, ...], all_stores: bool) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    return cmd if all_stores else [*cmd, "-m", "not postgres"]


def run_tests(src: Path, tests: tuple[str, ...], all_stores: bool) -> tuple[int, str]:
    missing = [t for t in tests if not (ROOT / t).exists()]
    if missing:
        print(f"  (not there yet, left out: {', '.join(missing)})", file=sys.stderr)
        tests = tuple(t for t in tests if t not in missing)
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        pytest_command(tests, all_stores),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return done.returncode, done.stdout + done.stderr


def first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ", 1)[0].split(" ", 1)[1]
    return ""


def check_import(src: Path) -> None:
    """The copy is what the tests import, not an installed package."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    found = subprocess.run(
        [sys.executable, "-c", "import deadletter; print(deadletter.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not found.startswith(str(src)):
        raise SystemExit(f"tests would import {found}, not the mutated copy under {src}")


def run(m: Mutation, work: Path, all_stores: bool, also: tuple[str, ...] = ()) -> Outcome:
    src = work / "src"
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    target = src / "deadletter" / m.file
    text = target.read_text()
    line = locate(m, text)
    target.write_text(mutate(m, text))
    check_import(src)
    started = time.monotonic()
    code, output = run_tests(src, m.tests + also, all_stores)
    seconds = time.monotonic() - started
    verdict = {0: "SURVIVED", 1: "caught"}.get(code, f"error (pytest exit {code})")
    if code not in (0, 1):
        sys.stderr.write(output[-3000:])
    return Outcome(m, line, verdict, first_failure(output), seconds)


def markdown(outcomes: list[Outcome]) -> str:
    rows = [
        "| mutation | file:line | rule broken | catching test |",
        "|---|---|---|---|",
    ]
    for o in outcomes:
        caught = f"`{o.first_failure}`" if o.verdict == "caught" else f"**{o.verdict}**"
        change = f"`{o.mutation.name}`"
        where = f"`{o.mutation.file}:{o.line}`"
        rows.append(f"| {change} | {where} | {o.mutation.breaks} | {caught} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="run only these mutations")
    parser.add_argument("--list", action="store_true", help="list the mutations, run nothing")
    parser.add_argument("--baseline", action="store_true", help="run the tests unmutated")
    parser.add_argument("--all-stores", action="store_true", help="PostgreSQL parameters too")
    parser.add_argument(
        "--also", nargs="+", default=[], metavar="FILE", help="run these test files too"
    )
    args = parser.parse_args()
    known = {m.name for m in MUTATIONS}
    unknown = set(args.names) - known
    if unknown:
        parser.error(f"unknown mutations: {', '.join(sorted(unknown))}")
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    for m in chosen:  # every original line is where the list says, before anything runs
        locate(m, (PACKAGE / m.file).read_text())
    if args.list:
        for m in chosen:
            line = locate(m, (PACKAGE / m.file).read_text())
            print(f"{m.name:40} {m.file}:{line}  {', '.join(m.tests)}")
        return 0
    if args.baseline:
        tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
        code, output = run_tests(ROOT / "src", tests, args.all_stores)
        print(output[-2000:])
        return code
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="deadletter-mutants-") as tmp:
        for m in chosen:
            outcome = run(m, Path(tmp), args.all_stores, tuple(args.also))
            outcomes.append(outcome)
            print(
                f"{outcome.verdict:9} {m.name:40} {outcome.seconds:6.1f}s  {outcome.first_failure}",
                flush=True,
            )
    print()
    print(markdown(outcomes))
    survivors = [o for o in outcomes if o.verdict != "caught"]
    print(f"\n{len(outcomes) - len(survivors)} of {len(outcomes)} caught")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
