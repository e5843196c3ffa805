"""`python -m deadletter` and `spark-submit .../deadletter/__main__.py`: the command line."""

from deadletter.cli.main import main

if __name__ == "__main__":
    main()
