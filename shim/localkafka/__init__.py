"""A real Apache Kafka on 127.0.0.1, from the Maven-resolved jars (see docs/local-kafka.md)."""

from .cluster import BrokerNotReady, LocalKafka, probe_brokers, stop_from_state
from .home import KAFKA_VERSION, EnvironmentProblem, KafkaInstall, check_java, install, kafka_home

__all__ = ["BrokerNotReady", "EnvironmentProblem", "KAFKA_VERSION", "KafkaInstall", "LocalKafka",
           "check_java", "install", "kafka_home", "probe_brokers", "stop_from_state"]
