"""shim/testcontainers.py, structure only (no Docker engine here): the container specs match
compose/docker-compose.yml and kshim's CLI, and the stack is wired in order, with fakes for
testcontainers' DockerContainer, DockerImage, Network and wait_for_logs."""

from __future__ import annotations

import sys

import pytest
import yaml

from shim import testcontainers as tc
from shim.cli import build_parser
from shim.localkafka.home import KAFKA_VERSION, project_root

COMPOSE = yaml.safe_load((project_root() / "compose" / "docker-compose.yml").read_text())


def test_kafka_is_the_compose_kafka():
    spec = tc.kafka_spec()
    assert spec.image == COMPOSE["services"]["kafka"]["image"] == f"apache/kafka:{KAFKA_VERSION}"
    assert spec.env == COMPOSE["services"]["kafka"]["environment"]
    assert spec.aliases == ["kafka"] and not spec.ports        # reached only through kshim


def test_kshim_command_is_a_valid_kshim_run():
    spec = tc.kshim_spec("kshim:dev", 29600, "localhost", ("--group-coordinator", "broker"))
    args = build_parser().parse_args(spec.command)            # the image's entrypoint is `kshim`
    assert args.command == "run"
    assert (args.upstream, args.listen_host, args.listen_port, args.advertised_host) == (
        "kafka:19092", "0.0.0.0", 29600, "localhost")
    assert args.group_coordinator == "broker"
    # bootstrap and node 1 (broker_port_base = listen_port + 1, plus node id 1) published 1:1
    assert spec.ports == {29600: 29600, 29602: 29602}
    compose_cmd = COMPOSE["services"]["kshim"]["command"]
    assert compose_cmd[:3] == spec.command[:3] == ["run", "--upstream", "kafka:19092"]


def test_image_comes_from_the_compose_dockerfile():
    context, path = tc.dockerfile()
    assert context == project_root() and path == COMPOSE["services"]["kshim"]["build"]["dockerfile"]
    assert 'ENTRYPOINT ["kshim"]' in (context / path).read_text()


class Fake:
    log: list = []

    def __init__(self, image=None, **kw):
        self.image, self.kw, self.calls = image, kw, []
        Fake.log.append(("new", type(self).__name__, image or kw.get("dockerfile_path")))

    def __getattr__(self, name):                 # with_env, with_bind_ports, ...: recorded, chainable
        def record(*args):
            self.calls.append((name, args))
            return self
        return record

    def start(self):
        Fake.log.append(("start", self.image))
        return self

    def build(self):
        return self

    def __str__(self):
        return "kshim:testcontainers"

    def __enter__(self):
        return self

    def get_container_host_ip(self):
        return "dockerhost"


def test_stack_starts_kafka_then_kshim_with_the_host_address():
    Fake.log = []
    waits = []
    stack = tc.KshimContainers(listen_port=29700, kshim_args=("--trace-dir", "/tmp/t"))
    stack._start(Fake, Fake, Fake, lambda c, text, timeout: waits.append((c.image, text)))
    assert [e for e in Fake.log if e[0] == "start"] == [("start", f"apache/kafka:{KAFKA_VERSION}"),
                                                       ("start", "kshim:testcontainers")]
    assert ("new", "Fake", "compose/Dockerfile") in Fake.log
    assert waits == [(f"apache/kafka:{KAFKA_VERSION}", "Kafka Server started"),
                     ("kshim:testcontainers", "kshim listening")]
    cmd = dict(stack.kshim.calls)["with_command"][0]
    assert cmd[cmd.index("--advertised-host") + 1] == "dockerhost" and cmd[-2:] == ["--trace-dir", "/tmp/t"]
    assert ("with_bind_ports", (29702, 29702)) in stack.kshim.calls
    assert ("with_network_aliases", ("kafka",)) in stack.kafka.calls
    assert stack.get_bootstrap_server() == "dockerhost:29700"


def test_without_testcontainers_the_error_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "testcontainers", None)
    monkeypatch.setitem(sys.modules, "testcontainers.core.container", None)
    with pytest.raises(RuntimeError, match=r"pip install 'kshim\[testcontainers\]'"):
        tc.KshimContainers().start()


def test_stop_removes_only_the_tag_it_made(monkeypatch):
    """The image is built under a tag of the stack's own, and stop() removes that tag (never an image
    by id: a build from cached layers can share its id with the user's own tags)."""
    Fake.log = []
    removed = []
    monkeypatch.setattr(tc, "remove_tag", removed.append)
    stack = tc.KshimContainers(listen_port=29700)
    stack._start(Fake, Fake, Fake, lambda *a, **k: None)
    image = stack._image
    assert image.kw["tag"].startswith("kshim:testcontainers-")
    stack.stop()
    assert removed == [str(image)] and ("remove", ()) not in image.calls
    assert stack._image is None


def test_the_build_context_leaves_out_the_set_up():
    """.dockerignore: only what compose/Dockerfile copies goes into the build context."""
    from shim.localkafka.home import project_root
    lines = [x.strip() for x in (project_root() / ".dockerignore").read_text().splitlines()]
    rules = [x for x in lines if x and not x.startswith("#")]
    assert rules[0] == "**"                   # everything out, then what the image needs back in
    copied = {"pyproject.toml", "README.md", "shim", "codecs", "compose/healthcheck.py"}
    assert {x[1:] for x in rules if x.startswith("!")} == copied
    dockerfile = (project_root() / "compose" / "Dockerfile").read_text()
    assert {w.rstrip("/") for line in dockerfile.splitlines() if line.startswith("COPY ") and "--from" not in line
            for w in line.split()[1:-1]} == copied
