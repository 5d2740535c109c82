"""compose/docker-compose.yml is valid for users who have Docker. No engine runs here, so the file
is checked structurally (and with `docker compose config` where that plugin exists)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from shim.cli import build_parser
from shim.localkafka.home import KAFKA_VERSION, project_root

COMPOSE = project_root() / "compose" / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_services_and_references(compose):
    services = compose["services"]
    assert {"kafka", "kshim", "static-consumer"} <= set(services)
    for name, svc in services.items():
        assert ("image" in svc) != ("build" in svc), f"{name}: exactly one of image/build"
        deps = svc.get("depends_on", [])
        for dep in (deps if isinstance(deps, list) else deps.keys()):
            assert dep in services, f"{name} depends on unknown service {dep}"
        for port in svc.get("ports", []):
            assert isinstance(port, str) and port.count(":") == 2, f"{name}: ports as 'ip:host:container' strings"


def test_kafka_images_match_the_pin(compose):
    images = [s["image"] for s in compose["services"].values() if "image" in s]
    assert images and all(i == f"apache/kafka:{KAFKA_VERSION}" for i in images), images


def test_kshim_service_command_is_a_valid_kshim_command_line(compose):
    svc = compose["services"]["kshim"]
    args = build_parser().parse_args(svc["command"])  # raises SystemExit on an unknown flag
    assert args.command == "run" and args.upstream == "kafka:19092"
    assert args.listen_host == "0.0.0.0" and args.advertised_host == "kshim"
    # the ports published are kshim's bootstrap port and its port for node 1 (listen_port + 1 + 1)
    from shim.config import Config
    published = {int(p.rsplit(":", 1)[1]) for p in svc["ports"]}
    assert published == {Config().listen_port, Config().broker_base + 1}
    dockerfile = project_root() / svc["build"]["dockerfile"]
    assert dockerfile.is_file()
    assert 'ENTRYPOINT ["kshim"]' in dockerfile.read_text()


def test_sample_consumer_uses_static_membership_through_kshim(compose):
    cmd = compose["services"]["static-consumer"]["command"]
    opts = dict(zip(cmd[1::2], cmd[2::2]))
    assert opts["--bootstrap-server"] == "kshim:9092"
    assert opts["--group-instance-id"]
    assert "verifiable-consumer" in cmd[0]


def test_kafka_service_is_kraft_with_consistent_listeners(compose):
    env = compose["services"]["kafka"]["environment"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    ctrl = env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split("@")[1]
    assert f"CONTROLLER://:{ctrl.split(':')[1]}" in env["KAFKA_LISTENERS"]
    adv_port = env["KAFKA_ADVERTISED_LISTENERS"].rsplit(":", 1)[1]
    assert f"PLAINTEXT://:{adv_port}" in env["KAFKA_LISTENERS"]


def test_docker_compose_config_where_available():
    """`config -q` validates the file without an engine: Compose v2 (`docker compose`) or v1
    (Debian's `docker-compose`, installed by scripts/setup --test when root)."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        cmd = [docker, "compose"]
    elif shutil.which("docker-compose"):
        cmd = ["docker-compose"]
    else:
        pytest.skip("neither docker compose (v2) nor docker-compose (v1) is installed here")
    out = subprocess.run([*cmd, "-p", "kshim-demo", "-f", str(COMPOSE), "config", "-q"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr


def test_compose_v1_accepts_the_top_level(compose):
    """Debian's docker-compose 1.29 (Compose v1) refuses a top-level key it does not know, such as
    `name:`; Compose v2 accepts what v1 does. The project is named on the command line (-p)."""
    assert set(compose) <= {"version", "services", "networks", "volumes", "secrets", "configs"}
    assert "-p kshim-demo" in COMPOSE.read_text()
