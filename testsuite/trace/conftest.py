"""One SparkSession for every `kshim trace analyze` test of a pytest session (local[2], no UI,
2 shuffle partitions); tests that use it are skipped when PySpark is not installed."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", reason="pip install 'kshim[analyze]'")
    from shim.trace.analyze.session import spark_session
    session = spark_session("local[2]", shuffle_partitions=2, driver_memory="1g", app_name="kshim tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def broker_capture(kafka, kafka_install, tmp_path_factory):
    """The scenario and a KIP-848 group run straight against the broker while tcpdump captures its
    port (testsuite/trace/broker_capture.py)."""
    from testsuite.harness import tcpdump
    from testsuite.trace.broker_capture import capture_broker
    if not tcpdump.available():
        pytest.skip("tcpdump not installed (scripts/setup --test)")
    return capture_broker(kafka, kafka_install, tmp_path_factory)
