"""The native API (Zaqar v2 with the dead-letter extensions) over HTTP."""
