"""The SQL both stores run: the statements (queries.py), the dialect that adapts them, and
the one Transaction implementation over them."""
