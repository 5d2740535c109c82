"""A bad environment gets a clear message that names the fix."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from shim.localkafka import BrokerNotReady, EnvironmentProblem, LocalKafka, check_java
from shim.localkafka.home import project_root
from shim.testing.ports import free_port_block

ROOT = project_root()


def _fake_java(tmp_path: Path, version_line: str | None) -> str:
    """A PATH holding a `java` that prints version_line (or no java at all), plus the basics."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("bash", "sh", "sed", "head", "cat", "sha256sum", "cut", "dirname", "env", "mvn", "javac"):
        real = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if real and tool not in ("java",):
            (bin_dir / tool).symlink_to(real)
    import sys
    (bin_dir / "python3").symlink_to(os.path.realpath(sys.executable))
    if version_line is not None:
        java = bin_dir / "java"
        java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
        java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return str(bin_dir)


def test_no_java(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _fake_java(tmp_path, None))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(EnvironmentProblem, match="no Java found.*JDK 17"):
        check_java()


def test_old_java(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _fake_java(tmp_path, 'openjdk version "11.0.22" 2024-01-16'))
    with pytest.raises(EnvironmentProblem, match="Java 11 found.*needs Java 17"):
        check_java()
    monkeypatch.setenv("PATH", _fake_java(tmp_path / "b", 'java version "1.8.0_402"'))
    with pytest.raises(EnvironmentProblem, match="Java 8 found"):
        check_java()


def test_java_17_accepted():
    assert check_java() >= 17


def _setup_check(path: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME",)}
    env["PATH"] = path
    return subprocess.run(["bash", str(ROOT / "scripts" / "setup"), "--check"], capture_output=True,
                          text=True, env=env, timeout=60)


def test_setup_script_names_fix_for_old_java(tmp_path):
    out = _setup_check(_fake_java(tmp_path, 'openjdk version "11.0.22" 2024-01-16'))
    assert out.returncode == 2
    assert "Java 11 found" in out.stderr and "openjdk-17" in out.stderr


def test_setup_script_names_fix_for_missing_maven(tmp_path):
    path = _fake_java(tmp_path, 'openjdk version "17.0.15" 2025-04-15')
    (Path(path) / "mvn").unlink()
    out = _setup_check(path)
    assert out.returncode == 2
    assert "no Maven found" in out.stderr and "apt-get install maven" in out.stderr


def test_setup_script_check_passes_here():
    out = _setup_check(os.environ["PATH"])
    assert out.returncode == 0, out.stderr
    assert "environment OK" in out.stderr


def test_port_in_use_is_named(tmp_path):
    base = free_port_block(2, start=39100)
    with socket.socket() as s:
        s.bind(("127.0.0.1", base))
        s.listen()
        cluster = LocalKafka(nodes=1, base_port=base, workdir=tmp_path)
        with pytest.raises(EnvironmentProblem, match=f"port 127.0.0.1:{base} is already in use.*--port"):
            cluster.start()
        assert not any(n.alive() for n in cluster.nodes)


def test_cli_reports_port_in_use_without_traceback(tmp_path):
    import sys
    base = free_port_block(2, start=39200)
    with socket.socket() as s:
        s.bind(("127.0.0.1", base))
        s.listen()
        out = subprocess.run([sys.executable, "-m", "shim.cli", "kafka", "start", "--port", str(base),
                              "--workdir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "already in use" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.kafka
def test_broker_not_ready_in_time_shows_log_tail(tmp_path):
    base = free_port_block(2, start=39300)
    cluster = LocalKafka(nodes=1, base_port=base, workdir=tmp_path)
    try:
        with pytest.raises(BrokerNotReady) as info:
            cluster.start(timeout=0.3)
        msg = str(info.value)
        assert "not ready after 0s" in msg or "not ready after" in msg
        assert str(cluster.nodes[0].log_file) in msg
        assert "last lines" in msg
    finally:
        cluster.stop()
    assert not cluster.nodes[0].alive()


@pytest.mark.kafka
def test_broker_that_dies_at_start_shows_log_tail(tmp_path):
    base = free_port_block(2, start=39400)
    # a heartbeat interval above the session timeout is rejected when the broker starts
    cluster = LocalKafka(nodes=1, base_port=base, workdir=tmp_path,
                         overrides={"group.consumer.heartbeat.interval.ms": "20000",
                                    "group.consumer.max.heartbeat.interval.ms": "20000"})
    try:
        with pytest.raises((BrokerNotReady, EnvironmentProblem)) as info:
            cluster.start(timeout=60)
        msg = str(info.value)
        assert "heartbeat" in msg.lower() or "exited" in msg
    finally:
        cluster.stop()


def test_kafka_start_set_adds_broker_properties(tmp_path):
    """`kshim kafka start --set k=v` reaches every node's properties and wins over kshim's defaults."""
    from shim.cli import _cluster, build_parser
    args = build_parser().parse_args(["kafka", "start", "--nodes", "3", "--workdir", str(tmp_path),
                                      "--set", "num.partitions=4", "--set", " min.insync.replicas = 2"])
    cluster = _cluster(args)
    props = [cluster._properties(n) for n in cluster.nodes]
    assert all("num.partitions=4\n" in p and "min.insync.replicas=2\n" in p for p in props), props[0]
    assert "min.insync.replicas=1\n" not in props[0]
    with pytest.raises(SystemExit, match="--set expects KEY=VALUE, got 'num.partitions'"):
        _cluster(build_parser().parse_args(["kafka", "start", "--set", "num.partitions"]))
