"""What vulture reports as unused in src/deadletter but is used all the same, each with why.

vulture reads this file beside the sources (`vulture`, configured in pyproject.toml;
tests/test_dead_code.py): a name mentioned here counts as used. Each entry is one name that
vulture finds unused in src/deadletter alone, and tests/test_dead_code.py fails on an entry
that is no longer such a finding, so the list cannot outlive what it excuses.

Add an entry only for a name that is called from outside src's own code (a framework, a
driver, a test, a benchmark); code that nothing calls is removed instead.
"""

# ruff: noqa: B018


class _Names:
    """Any attribute: `_.name` mentions `name` for vulture without importing anything."""

    def __getattr__(self, name: str) -> None:
        return None


_ = _Names()

# Called by a framework through an interface it defines.
_.describe  # api/metrics.py: prometheus_client's Collector.describe
_.capture_signals  # server.py: overrides uvicorn.Server.capture_signals
_.worker_app  # server.py: the app factory uvicorn imports by name (`server:worker_app`)
_.show  # cli/output.py: click.ClickException.show; cli/{queues,tags,templates}.py: commands
_.export  # cli/dlq.py: a click command, registered by its decorator
_.edit  # cli/dlq.py: a click command, registered by its decorator
_.set_  # cli/auto_redrive.py: a click command, registered by its decorator
_.create_operator  # cli/credentials.py: a click command, registered by its decorator
_.list_patterns  # cli/patterns.py: a click command, registered by its decorator
_.list_commands  # cli/main.py: LazyGroup overrides click.Group's
_.get_command  # cli/main.py: LazyGroup overrides click.Group's
_.format_commands  # cli/main.py: LazyGroup overrides click.Group's
_.nack  # cli/messages.py: a click command, loaded by name (cli/main.py's COMMANDS)
_.pushFilters  # pipeline/datasource.py: pyspark's DataSourceReader
_.abort  # pipeline/datasource.py: pyspark's DataSourceWriter
_.readBetweenOffsets  # pipeline/datasource.py: pyspark's SimpleDataSourceStreamReader
_.simpleStreamReader  # pipeline/datasource.py: pyspark's DataSource
_.streamWriter  # pipeline/datasource.py: pyspark's DataSource
_.path_regex  # api/zaqar/routes.py: a Starlette Route's, recompiled; its router reads it
_.path_format  # api/zaqar/routes.py: a Starlette Route's, recompiled
_.param_convertors  # api/zaqar/routes.py: a Starlette Route's, recompiled
_.overwrite  # pipeline/datasource.py: a parameter pyspark's DataSource.writer passes

# Attributes of a driver's or the standard library's objects, set to change their behaviour.
_.read_only  # storage/postgres/backend.py: psycopg.Connection.read_only
_.row_factory  # storage/sqlite/backend.py: sqlite3.Connection.row_factory
_.disabled  # logs.py: logging.Logger.disabled (uvicorn's access log)
_.prepare_threshold  # storage/postgres/prepared.py: psycopg.Connection.prepare_threshold

# Values that are read by lookup or compared whole, never by attribute name.
_.GET  # auth/signed_urls.py: Method members, looked up by value (Method("GET"))
_.POST
_.PUT
_.PATCH
_.DELETE
_.presigned  # auth/sigv4.py: a field of SigV4Identity, compared whole
_.issued_at  # auth/tokens.py: a field of TokenClaims, as the token states it

# Used by the tests or the benchmarks only: test doubles and the measures they report.
_.ManualClock  # clock.py
_.advance  # clock.py: ManualClock.advance
_.listener_failures  # engine/engine.py
_.drain  # engine/deliveries.py: a delivery runner run to completion
_.subscriber_count  # api/console/feed.py
_.markdown_table  # domain/limits.py: docs/limits.md's table, checked against it
_.seal_secret  # auth/credentials.py
_.unseal_secret  # auth/credentials.py
_.key_file_beside  # auth/credentials.py
_.clear_caches  # pipeline/text.py
_.assign  # pipeline/batches.py
_.grouping_accuracy  # pipeline/corpus.py
_.f1_grouping  # pipeline/corpus.py
_.adjusted_rand_index  # pipeline/corpus.py
