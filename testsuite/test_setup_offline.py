"""A second run of scripts/setup downloads nothing: it must succeed with no network at all
(a fresh network namespace, where every connection fails)."""

from __future__ import annotations

import subprocess

import pytest

from shim.localkafka.home import project_root


def test_second_setup_run_needs_no_network():
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -n unavailable here: {probe.stderr.decode().strip()}")
    setup = str(project_root() / "scripts" / "setup")
    subprocess.run([setup, "--test"], check=True, capture_output=True, timeout=600)  # make sure all is set up
    out = subprocess.run(["unshare", "-n", setup, "--test"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "up to date" in out.stderr
    assert "resolving" not in out.stderr and "installing" not in out.stderr
    # scripts/up after scripts/test: the plain set-up is satisfied by the test install
    plain = subprocess.run(["unshare", "-n", setup], capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    assert "installing" not in plain.stderr and "resolving" not in plain.stderr
