"""Fixtures of the differential group tests."""

from __future__ import annotations

import pytest

from shim.compat.javaclient import JavaTools


@pytest.fixture
def both(kafka, kshim, kafka_install, tmp_path):
    """Java tools against the real broker ("broker") and through kshim ("kshim"), same scenario on each."""
    tools = {"broker": JavaTools(kafka_install, kafka.bootstrap, tmp_path / "broker"),
             "kshim": JavaTools(kafka_install, kshim.bootstrap, tmp_path / "kshim")}
    yield tools
    for t in tools.values():
        t.stop_all()
