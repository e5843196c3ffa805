"""Schemathesis over /openapi.json against the in-process app, on every store: no request it
can build gets a 5xx, and every answer conforms to the document (status, type, schema).
A schema-valid request may still be refused for what a schema cannot say (a redrive of a queue
that is no dead-letter queue), so the check that valid data is accepted is left out.

The suite runs a few cases per operation; `./dev fuzz` runs the same with
DEADLETTER_FUZZ_EXAMPLES raised (>= 10,000 cases in all) and prints the counts.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from deadletter.api.app import build_app
from deadletter.api.openapi import PATCH_TYPE
from deadletter.engine.engine import Engine

EXAMPLES = int(os.environ.get("DEADLETTER_FUZZ_EXAMPLES", "4"))
counts: Counter[str] = Counter()


@schemathesis.serializer(PATCH_TYPE)
def _patch(ctx: Any, value: Any) -> dict[str, Any]:
    return {"data": json.dumps(value).encode()}


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    print(f"\nfuzz: {counts['cases']} cases, {counts['5xx']} answered 5xx")


def test_every_operation_answers_without_5xx_and_as_documented(engine: Engine) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", build_app(engine))
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,  # examples saved by an earlier document would replay differently
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            response = case.call()
            counts["cases"] += 1
            if response.status_code >= 500:
                counts["5xx"] += 1
            case.validate_response(response, excluded_checks=[positive_data_acceptance])

        try:
            run()
        except (Exception, BaseExceptionGroup) as exc:  # every operation's first failure
            failures.append(f"{operation.label}: {exc}")
    assert not failures, "\n\n".join(failures)
