"""The images the `docker` tests need, built locally (no registry is reachable here), each only when
the hash of its inputs changed (the label kshim.input on the image):
- kshim-base:bookworm  Debian bookworm (debootstrap --variant=minbase) with the host's CA bundle, so
                       package and PyPI downloads inside builds trust the roots the host trusts;
- python:3.11-slim     Debian's Python 3.11 on it (testsuite/docker/images/python);
- apache/kafka:<pin>   Debian's Java 17 runtime and the Kafka scripts/setup installed, started by a
                       run script that reads KAFKA_* variables as the real image's does (images/kafka);
- kshim:local          compose/Dockerfile, the image users build (and kshim:build-stage, its first stage).
Usage: python -m testsuite.harness.docker_images  (starts the engine if needed, builds, leaves it as found)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shim.localkafka.home import KAFKA_VERSION, kafka_home, project_root
from testsuite.harness import docker_engine as engine

ROOT = project_root()
IMAGES = ROOT / "testsuite" / "docker" / "images"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
MIRROR = "http://deb.debian.org/debian"
HOST_CA = "/etc/ssl/host-ca-bundle.crt"
BASE, PYTHON, KAFKA, KSHIM = "kshim-base:bookworm", "python:3.11-slim", f"apache/kafka:{KAFKA_VERSION}", "kshim:local"
# compose/Dockerfile's build stage, tagged so that it stays the cache of later builds of that file
# (KshimContainers' own, compose's) instead of a dangling image
KSHIM_BUILD = "kshim:build-stage"


def _sha(*parts: bytes | str | Path) -> str:
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, Path):
            for f in sorted(p.rglob("*")) if p.is_dir() else [p]:
                if f.is_file() and "__pycache__" not in f.parts:
                    h.update(str(f.relative_to(ROOT) if f.is_relative_to(ROOT) else f).encode())
                    h.update(f.read_bytes())
        else:
            h.update(p.encode() if isinstance(p, str) else p)
    return h.hexdigest()[:16]


def _label(tag: str) -> str | None:
    out = engine.docker("image", "inspect", "-f", '{{index .Config.Labels "kshim.input"}}', tag, check=False)
    return out.stdout.decode().strip() if out.returncode == 0 else None


def _build(tag: str, context: Path, want: str, dockerfile: Path | None = None, target: str | None = None) -> None:
    args = ["build", "--network", "host", "--label", f"kshim.input={want}", "-t", tag]
    if target is not None:
        args += ["--target", target]
    if dockerfile is not None:
        args += ["-f", str(dockerfile)]
    out = engine.docker(*args, str(context), check=False, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"docker build {tag} failed:\n{out.stdout.decode()[-3000:]}{out.stderr.decode()[-3000:]}")


def base_image(want: str) -> None:
    with tempfile.TemporaryDirectory(dir=engine.HOME) as d:
        rootfs = Path(d) / "rootfs"
        out = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(rootfs), MIRROR],
                             capture_output=True, text=True, timeout=1200)
        if out.returncode != 0:
            raise RuntimeError(f"debootstrap failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
        # the host's roots in a file no package rewrites (update-ca-certificates regenerates the
        # usual bundle when a build installs ca-certificates); SSL_CERT_FILE/PIP_CERT point at it
        (rootfs / "etc/ssl/certs").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CA_BUNDLE, rootfs / "etc/ssl/certs/ca-certificates.crt")
        shutil.copyfile(CA_BUNDLE, rootfs / HOST_CA.lstrip("/"))
        shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(["docker", "import", "--change", f"LABEL kshim.input={want}",
                              "--change", f"ENV SSL_CERT_FILE={HOST_CA} PIP_CERT={HOST_CA}",
                              "--change", 'CMD ["/bin/bash"]', "-", BASE],
                             stdin=tar.stdout, env=engine.env(), capture_output=True, timeout=600)
        tar.wait()
        if imp.returncode != 0:
            raise RuntimeError(f"docker import failed: {imp.stderr.decode()[-2000:]}")


def kafka_image(want: str) -> None:
    with tempfile.TemporaryDirectory(dir=engine.HOME) as d:
        ctx = Path(d)
        shutil.copytree(kafka_home(), ctx / "kafka", copy_function=_link_or_copy,
                        ignore=shutil.ignore_patterns("logs", "*.log"))
        for name in ("Dockerfile", "run"):
            shutil.copy2(IMAGES / "kafka" / name, ctx / name)
        _build(KAFKA, ctx, want)


def _link_or_copy(src, dst):
    try:
        Path(dst).hardlink_to(src)
    except OSError:
        shutil.copy2(src, dst)


def build_all(log=print) -> dict[str, float]:
    """Every image, in order, each only when its inputs changed; returns seconds per built image."""
    took: dict[str, float] = {}
    base = _sha("debootstrap --variant=minbase bookworm", MIRROR, HOST_CA, CA_BUNDLE)
    python = _sha(base, IMAGES / "python")
    kafka = _sha(base, KAFKA_VERSION, IMAGES / "kafka")
    kshim = _sha(python, ROOT / "compose" / "Dockerfile", ROOT / ".dockerignore", ROOT / "pyproject.toml",
                 ROOT / "README.md", ROOT / "shim", ROOT / "codecs")
    steps = [(BASE, base, lambda: base_image(base)),
             (PYTHON, python, lambda: _build(PYTHON, IMAGES / "python", python)),
             (KAFKA, kafka, lambda: kafka_image(kafka)),
             (KSHIM_BUILD, kshim, lambda: _build(KSHIM_BUILD, ROOT, kshim, ROOT / "compose" / "Dockerfile",
                                                 target="build")),
             (KSHIM, kshim, lambda: _build(KSHIM, ROOT, kshim, ROOT / "compose" / "Dockerfile"))]
    for tag, want, build in steps:
        if _label(tag) == want:
            log(f"image {tag} up to date")
            continue
        log(f"building image {tag}")
        t0 = time.monotonic()
        build()
        took[tag] = round(time.monotonic() - t0, 1)
        log(f"built image {tag} in {took[tag]} s")
    return took          # (no prune: the untagged build stage of compose/Dockerfile is the cache of its next build)


def main() -> int:
    reason = engine.why_not()
    if reason:
        print(f"[kshim] Docker images not built: {reason}")
        return 0
    was_running = engine.running()
    started = engine.start()
    print(f"[kshim] Docker engine up on {engine.SOCKET} ({started:.1f} s)")
    try:
        build_all(lambda m: print(f"[kshim] {m}", flush=True))
    finally:
        if not was_running:
            engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
