"""kshim: a Kafka wire-compatible broker shim with its own group coordinator."""

__version__ = "0.1.0"
