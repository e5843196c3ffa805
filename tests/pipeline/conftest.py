"""Fixtures of the pipeline tests: one local SparkSession for the whole run, labelled corpora."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.services import java_available, missing

# pyspark warns about the pandas major version on every pandas UDF it builds.
PANDAS_WARNING = "ignore:PySpark does not yet fully support pandas:FutureWarning"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """local[2], few shuffle partitions, no UI: small and quick to start."""
    reason = java_available()
    if reason:
        missing(reason)
    from deadletter.pipeline.schema import session

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        s = session("local[2]", app_name="deadletter-tests")
    s.conf.set("spark.sql.shuffle.partitions", "4")
    s.conf.set("spark.default.parallelism", "2")
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@contextmanager
def masks_taken_away() -> Iterator[None]:
    """The tokeniser with no masks (numbers and tokens with digits still become variables),
    and no token remembered from before or kept for after: they are masked otherwise."""
    from deadletter.pipeline import text

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text, "_MASKS", [])
        patch.setattr(text, "_WORD_MASKS", [])
        text.clear_caches()
        try:
            yield
        finally:
            text.clear_caches()


def load_labels(path: Path) -> dict[str, str]:
    with path.open() as fh:
        return {r["message_id"]: r["label"] for r in map(json.loads, fh)}


@pytest.fixture(scope="session")
def corpus_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 labelled dead letters in the export's JSON-lines format."""
    from deadletter.pipeline.corpus import write_jsonl

    path = tmp_path_factory.mktemp("corpus") / "dead.jsonl"
    write_jsonl(path, 3000, seed=7)
    return path
