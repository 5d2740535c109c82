"""The tests' own Java programs (testsuite/java/*.java) compiled against the Kafka jars (and, for the
Streams app, the Kafka Streams jars scripts/setup resolves into build/kafka-streams-<version>/libs),
then run as JavaClients printing JSON lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shim.localkafka.home import KAFKA_VERSION, build_dir, kafka_home
from shim.compat.javaclient import JavaClient, JavaTools

SOURCES = Path(__file__).resolve().parents[1] / "java"


def streams_libs() -> Path:
    """Kafka Streams and its runtime dependencies (scripts/kafka/streams-pom.xml)."""
    return build_dir() / f"kafka-streams-{KAFKA_VERSION}" / "libs"


def require_streams_libs() -> Path:
    libs = streams_libs()
    if not list(libs.glob("kafka-streams-*.jar")):
        pytest.fail(f"Kafka Streams is not installed in {libs}: run scripts/setup "
                    "(it resolves scripts/kafka/streams-pom.xml from Maven Central)")
    return libs


def compile_app(source: str, outdir: Path, extra_classpath: list[Path] = ()) -> Path:
    """javac testsuite/java/<source> (and the helpers it uses from there) into outdir; returns outdir
    (a classpath entry)."""
    cp = ":".join([f"{kafka_home() / 'libs'}/*", *(f"{p}/*" for p in extra_classpath)])
    subprocess.run(["javac", "-nowarn", "-d", str(outdir), "-cp", cp, "-sourcepath", str(SOURCES), str(SOURCES / source)],
                   check=True)
    return outdir


def start_app(java: JavaTools, main: str, args: list[str], name: str, classpath: list[str],
              heap: str = "256m", extra_jvm: list[str] | None = None) -> JavaClient:
    """Run `main` (a compiled test app) on Kafka's classpath with `classpath` entries in front;
    `extra_jvm` options follow the standard ones (a later -D wins)."""
    cmd = java.kafka.java_cmd(main, args, heap=heap, extra_jvm=extra_jvm)
    cp = cmd.index("-cp") + 1
    cmd[cp] = ":".join([*classpath, cmd[cp]])
    c = JavaClient(name=name, cmd=cmd, log_path=java.log_dir / f"{name}.stderr.log")
    java.clients.append(c)
    return c.start()
