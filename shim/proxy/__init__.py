"""The proxy: client listeners in front of a real Kafka cluster (asyncio I/O, kept thin)."""
