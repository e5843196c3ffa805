"""I/O the engine needs, behind the interfaces it owns, wired in by `deadletter.server`."""
