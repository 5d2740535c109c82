"""A long-lived JVM running one of the project's Java helpers (testsuite/java/*.java) against the
Kafka jars, spoken to in line-delimited JSON: one request line in, one answer line out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JAVA_SOURCES = ROOT / "testsuite" / "java"


class JsonJvm:
    def __init__(self, main_class: str, classdir: Path, libs: Path):
        java = shutil.which("java", path=os.path.join(os.environ.get("JAVA_HOME", ""), "bin")) or "java"
        self.main_class = main_class
        self.proc = subprocess.Popen(
            [java, "-Xshare:auto", "-XX:+UseSerialGC", "-cp", f"{classdir}{os.pathsep}{libs}/*", main_class],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1)

    def call(self, **req) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.main_class} exited ({self.proc.poll()})")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_json_jvm(main_class: str, tmp_path_factory) -> JsonJvm:
    """The helper compiled by scripts/setup into build/java, or compiled now into a temporary
    folder when that copy is missing or older than its source; answers a ping before use."""
    from shim.localkafka.home import kafka_home
    libs = kafka_home() / "libs"
    if not libs.is_dir():
        pytest.fail(f"Kafka jars missing in {libs}: run scripts/setup --test")
    source = JAVA_SOURCES / f"{main_class}.java"
    classdir = ROOT / "build" / "java"
    built = classdir / f"{main_class}.class"
    if not built.exists() or built.stat().st_mtime < source.stat().st_mtime:
        classdir = tmp_path_factory.mktemp(f"{main_class}-classes")
        subprocess.run(["javac", "-nowarn", "-d", str(classdir), "-cp", f"{libs}/*", str(source)], check=True)
    jvm = JsonJvm(main_class, classdir, libs)
    assert jvm.call(op="ping") == {"ok": True}
    return jvm
