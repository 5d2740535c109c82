"""kshim's settings: defaults < file (TOML or YAML) < environment < flags; errors name the key."""

from __future__ import annotations

import pytest

from shim.cli import build_parser
from shim.config import Config, ConfigError, flags_from_args, load


def test_defaults_are_kafkas():
    cfg = load(environ={})
    assert (cfg.listen_port, cfg.broker_base, cfg.max_frame_bytes) == (9092, 9093, 104857600)
    assert cfg.group_initial_rebalance_delay_ms == 3000 and cfg.group_min_session_timeout_ms == 6000
    assert cfg.coordinator_config().offsets_retention_ms == 7 * 24 * 3600 * 1000


def test_precedence_file_env_flags(tmp_path):
    toml = tmp_path / "kshim.toml"
    toml.write_text('[kshim]\nlisten_port = 9100\nupstream = "a:1"\nmetadata_refresh_s = 3.5\n')
    assert load(toml, environ={}).listen_port == 9100
    assert load(toml, environ={"KSHIM_LISTEN_PORT": "9200"}).listen_port == 9200
    args = build_parser().parse_args(["run", "--listen-port", "9300", "--config", str(toml)])
    cfg = load(args.config, flags_from_args(args), environ={"KSHIM_LISTEN_PORT": "9200"})
    assert (cfg.listen_port, cfg.upstream, cfg.metadata_refresh_s) == (9300, "a:1", 3.5)
    assert cfg.upstream_addresses() == [("a", 1)]


def test_yaml_file_and_booleans(tmp_path):
    y = tmp_path / "kshim.yaml"
    y.write_text("upstream_tls: true\nupstream: 'b:2,c:3'\n")
    cfg = load(y, environ={"KSHIM_UPSTREAM_TLS_CHECK_HOSTNAME": "false"})
    assert cfg.upstream_tls is True and cfg.upstream_tls_check_hostname is False
    assert cfg.upstream_addresses() == [("b", 2), ("c", 3)]
    args = build_parser().parse_args(["run", "--no-upstream-tls", "--config", str(y)])
    assert load(args.config, flags_from_args(args), environ={}).upstream_tls is False


@pytest.mark.parametrize("text,needle", [
    ("listen_prot = 1\n", "unknown setting(s) listen_prot"),
    ("listen_port = 'x'\n", "listen_port: 'x' is not a valid int"),
    ("upstream = 'nohostport'\n", "is not host:port"),
    ("tls_cert = 'a.pem'\n", "tls_cert and tls_key go together"),
    ("group_coordinator = 'zk'\n", "use kshim or broker"),
])
def test_bad_settings_are_named(tmp_path, text, needle):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=None) as info:
        load(f, environ={})
    assert needle in str(info.value)


def test_run_reports_bad_config_without_traceback(tmp_path):
    import subprocess
    import sys
    f = tmp_path / "bad.toml"
    f.write_text("listen_port = 0\n")
    out = subprocess.run([sys.executable, "-m", "shim.cli", "run", "--config", str(f)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "configuration: listen_port 0 is not a TCP port" in out.stderr
    assert "Traceback" not in out.stderr
    assert Config().advertised == "127.0.0.1"
