"""Where the release-shaped Kafka lives, and the checks and commands that use it.

`scripts/setup` resolves Apache Kafka from Maven Central (scripts/kafka/pom.xml) into
`build/kafka-<version>/libs`; `write_layout` then adds `bin/` wrappers and `config/` so the folder
looks like a Kafka release (third-party harnesses that want KAFKA_HOME work unchanged).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MIN_JAVA = 17


class EnvironmentProblem(RuntimeError):
    """The machine lacks something kshim needs; the message names the fix."""


def project_root() -> Path:
    """The kshim checkout (holds scripts/kafka/pom.xml); KSHIM_HOME overrides."""
    env = os.environ.get("KSHIM_HOME")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "scripts" / "kafka" / "pom.xml").is_file():
            return parent
    return Path.home() / ".kshim"


def _pinned_version() -> str:
    """The Kafka pin: KAFKA_VERSION, else <kafka.version> of scripts/kafka/pom.xml."""
    if os.environ.get("KAFKA_VERSION"):
        return os.environ["KAFKA_VERSION"]
    pom = project_root() / "scripts" / "kafka" / "pom.xml"
    if pom.is_file():
        m = re.search(r"<kafka.version>(.*?)</kafka.version>", pom.read_text())
        if m:
            return m.group(1)
    return "4.4.0"


KAFKA_VERSION = _pinned_version()


def build_dir() -> Path:
    return project_root() / "build"


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    env = os.environ.get("KAFKA_HOME")
    if env:
        return Path(env).resolve()
    return build_dir() / f"kafka-{version}"


def java_version(java: str = "java") -> int:
    """Major version of `java`, or raise EnvironmentProblem naming the fix."""
    exe = shutil.which(java)
    if exe is None:
        raise EnvironmentProblem(
            f"no Java found on PATH: install a JDK {MIN_JAVA} or newer "
            "(Debian: apt-get install openjdk-17-jdk-headless) or put its bin/ on PATH"
        )
    out = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=60)
    text = out.stderr + out.stdout
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        raise EnvironmentProblem(f"could not read the Java version from `{exe} -version`: {text.strip()!r}")
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_x" style
        major = int(m.group(2))
    return major


def check_java(java: str = "java") -> int:
    major = java_version(java)
    if major < MIN_JAVA:
        raise EnvironmentProblem(
            f"Java {major} found, Kafka {KAFKA_VERSION} needs Java {MIN_JAVA} or newer: "
            "install openjdk-17-jdk-headless (or newer) and put it first on PATH, or set JAVA_HOME"
        )
    return major


@dataclass(frozen=True)
class KafkaInstall:
    """A release-shaped Kafka folder: libs/, bin/, config/."""

    home: Path

    @property
    def libs(self) -> Path:
        return self.home / "libs"

    @property
    def classpath(self) -> str:
        # Quoted wildcard: Java, not the shell, expands it.
        return str(self.libs / "*")

    def check(self) -> "KafkaInstall":
        jars = list(self.libs.glob("kafka_2.13-*.jar")) if self.libs.is_dir() else []
        if not jars:
            raise EnvironmentProblem(
                f"Kafka is not installed at {self.home}: run scripts/setup "
                f"{'' if self.home.name == f'kafka-{KAFKA_VERSION}' else '--kafka-version ' + self.home.name.removeprefix('kafka-') + ' '}"
                "(it resolves Kafka from Maven Central with scripts/kafka/pom.xml)"
            )
        return self

    def java_cmd(self, main_class: str, args: list[str], *, heap: str = "256m",
                 log4j: str = "tools", extra_jvm: list[str] | None = None) -> list[str]:
        """The command line that runs `main_class` on Kafka's classpath."""
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
        jvm = [f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={self.home / 'config' / f'log4j2-{log4j}.properties'}"]
        return [java, *jvm, *(extra_jvm or []), "-cp", self.classpath, main_class, *args]


def install(version: str = KAFKA_VERSION) -> KafkaInstall:
    return KafkaInstall(kafka_home(version)).check()
