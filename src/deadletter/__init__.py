"""deadletter: a message-queue server built around the dead-letter queue."""

__version__ = "0.1.0"
