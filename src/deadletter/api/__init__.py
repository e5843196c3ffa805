"""The HTTP faces: the native Zaqar v2 API and the SQS API, served by one ASGI app."""
