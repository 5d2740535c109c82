"""The kshim pytest plugin (shim/testing/plugin.py), used as a user would: pytest run in a fresh
directory on docs/examples/test_kshim_example.py (the documented example), against this run's Kafka."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from shim.localkafka.home import project_root

EXAMPLE = project_root() / "docs" / "examples" / "test_kshim_example.py"


def _pytest(directory: Path, *args: str) -> subprocess.CompletedProcess:
    # the installed entry point (scripts/setup), else the module itself (a PYTHONPATH-only checkout)
    load = [] if any(ep.name == "kshim" for ep in entry_points(group="pytest11")) else ["-p", "shim.testing.plugin"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *load, *args],
                          cwd=directory, env=env, capture_output=True, text=True, timeout=300)


def test_entry_point_is_declared():
    import tomllib
    meta = tomllib.loads((project_root() / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"] == {"kshim": "shim.testing.plugin"}


def test_fixtures_are_opt_in(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x(kshim_server):\n    pass\n")
    out = _pytest(tmp_path, "-q")
    assert out.returncode == 1 and "fixture 'kshim_server' not found" in out.stdout, out.stdout


@pytest.mark.kafka
def test_documented_example_passes(kafka, tmp_path):
    shutil.copy(EXAMPLE, tmp_path)
    out = _pytest(tmp_path, "-q", "--kshim", f"--kshim-upstream={kafka.bootstrap}")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 passed" in out.stdout


@pytest.mark.kafka
def test_kshim_args_reach_kshim_run(kafka, tmp_path):
    """--kshim-args are `kshim run` flags: with the broker as coordinator, kshim traces no group event."""
    (tmp_path / "test_y.py").write_text(
        "from test_kshim_example import produce_and_consume\n"
        "def test_y(kshim_server, kshim_topic, kshim_names, kshim_trace):\n"
        "    group = kshim_names.group()\n"
        "    assert produce_and_consume(kshim_server.bootstrap, kshim_topic(), group) == [b'one', b'two']\n"
        "    assert kshim_trace.frames(api='JoinGroup', group=group)\n"
        "    assert not kshim_trace.events(group=group)\n")
    shutil.copy(EXAMPLE, tmp_path)
    out = _pytest(tmp_path, "-q", "--kshim", f"--kshim-upstream={kafka.bootstrap}",
                  "--kshim-args=--group-coordinator broker", "test_y.py")
    assert out.returncode == 0, out.stdout + out.stderr
