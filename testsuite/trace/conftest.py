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
