"""deadletter: a message-queue server built around the dead-letter queue."""

# The one statement of the version: the package's metadata reads it from here
# (pyproject.toml, tool.hatch.version); CHANGELOG.md says what each version changed.
__version__ = "0.1.0"
