"""The SQS face: AWS's JSON and query protocols over the same engine."""
