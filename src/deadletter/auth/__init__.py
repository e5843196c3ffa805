"""Credentials, roles and request authentication for both faces, free of storage and HTTP."""
