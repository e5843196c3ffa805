"""The engine: queues, claims and the dead-letter lifecycle, independent of HTTP and SQL."""
