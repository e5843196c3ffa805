"""Tests of the HTTP faces and the server process."""
