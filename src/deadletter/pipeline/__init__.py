"""Failure-pattern analysis of dead letters on Spark: data source, mining, reports, corpus."""

from __future__ import annotations

from typing import Any


def require_pyspark() -> Any:
    """Import pyspark lazily: the server and CLI work without the optional `spark` extra."""
    try:
        import pyspark
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "the analysis pipeline needs PySpark: pip install 'deadletter[spark]' (and Java 17+)"
        ) from exc
    return pyspark
