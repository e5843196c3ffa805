"""Side-by-side benchmarks of deadletter and its peers (RabbitMQ, Zaqar, moto)."""
