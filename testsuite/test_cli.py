"""The `kshim` console command."""

from __future__ import annotations

import subprocess
import sys

import shim
from shim.localkafka.home import KAFKA_VERSION


def _kshim(*args: str) -> subprocess.CompletedProcess:
    exe = [sys.executable, "-m", "shim.cli"]
    return subprocess.run([*exe, *args], capture_output=True, text=True, timeout=60)


def test_help_lists_commands():
    out = _kshim("--help")
    assert out.returncode == 0
    for cmd in ("run", "kafka", "version"):
        assert cmd in out.stdout


def test_version_names_kshim_and_kafka_pin():
    out = _kshim("version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"kshim {shim.__version__} (Kafka pin {KAFKA_VERSION})"


def test_console_script_installed():
    from pathlib import Path
    exe = Path(sys.executable).parent / "kshim"
    assert exe.exists(), "the kshim console script is not installed in the venv"
    out = subprocess.run([str(exe), "version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "kshim" in out.stdout


def test_kafka_pin_matches_pom():
    import re
    from shim.localkafka.home import project_root
    pom = (project_root() / "scripts" / "kafka" / "pom.xml").read_text()
    assert re.search(r"<kafka.version>(.*?)</kafka.version>", pom).group(1) == KAFKA_VERSION


def test_unknown_command_fails_cleanly():
    out = _kshim("nope")
    assert out.returncode == 2
    assert "invalid choice" in out.stderr


def test_every_package_is_listed_in_pyproject():
    """A non-editable install (compose/Dockerfile) ships only the packages pyproject lists."""
    import tomllib
    from shim.localkafka.home import project_root
    root = project_root()
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "shim").rglob("__init__.py")}
    found |= {"kcodec" + "".join("." + x for x in p.parent.relative_to(root / "codecs" / "kcodec").parts)
              for p in (root / "codecs" / "kcodec").rglob("__init__.py")}
    assert found <= listed, f"not in pyproject packages: {sorted(found - listed)}"
