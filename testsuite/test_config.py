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


# ---------------------------------------------------------------------- the broker's group settings
BROKER = {"group.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "10000",
          "group.consumer.min.session.timeout.ms": "3000", "group.consumer.heartbeat.interval.ms": "1000",
          "group.consumer.min.heartbeat.interval.ms": "500", "group.consumer.assignors":
          "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform", "unrelated.setting": "x"}


def test_precedence_explicit_over_broker_over_default():
    from shim.config import adopt_broker_settings, check_group_bounds
    args = build_parser().parse_args(["run", "--group-consumer-heartbeat-interval-ms", "2000"])
    cfg = load(None, flags_from_args(args), environ={"KSHIM_GROUP_MAX_SIZE": "7"})
    adopted = adopt_broker_settings(cfg, dict(BROKER, **{"group.max.size": "100"}))
    assert cfg.group_consumer_heartbeat_interval_ms == 2000          # flag
    assert cfg.group_max_size == 7                                   # environment
    assert cfg.group_min_session_timeout_ms == 1000 and cfg.group_consumer_session_timeout_ms == 10000   # broker
    assert cfg.group_max_session_timeout_ms == 1800000               # default: the broker did not say
    assert cfg.group_consumer_assignors == "range,uniform"
    assert "group_consumer_heartbeat_interval_ms" not in adopted and "group_min_session_timeout_ms" in adopted
    assert cfg.adopted["kept"] == {"group_consumer_heartbeat_interval_ms": (2000, "1000"),
                                   "group_max_size": (7, "100")}
    check_group_bounds(cfg)
    cc = cfg.coordinator_config()
    assert (cc.min_session_timeout_ms, cc.consumer_session_timeout_ms, cc.consumer_min_session_timeout_ms,
            cc.consumer_heartbeat_interval_ms, cc.consumer_assignors) == (1000, 10000, 3000, 2000, ("range", "uniform"))


def test_broker_bounds_checked_after_adoption():
    from shim.config import adopt_broker_settings, check_group_bounds
    cfg = load(None, {"group_consumer_session_timeout_ms": 4000}, environ={})
    adopt_broker_settings(cfg, {"group.consumer.min.session.timeout.ms": "5000"})
    with pytest.raises(ConfigError, match="group_consumer_session_timeout_ms .4000. must be greater than or equal "
                                          "to group_consumer_min_session_timeout_ms .5000.; adopted from the broker"):
        check_group_bounds(cfg)


def test_unknown_assignor_not_adopted_and_refused_when_given():
    from shim.config import adopt_broker_settings
    cfg = load(environ={})
    adopt_broker_settings(cfg, {"group.consumer.assignors": "com.example.MyAssignor"})
    assert cfg.group_consumer_assignors == "uniform,range" and "group_consumer_assignors" in cfg.adopted["skipped"]
    with pytest.raises(ConfigError, match="not an assignor kshim has"):
        load(environ={"KSHIM_GROUP_CONSUMER_ASSIGNORS": "sticky"})


def test_directly_constructed_config_counts_non_defaults_as_given():
    from shim.config import adopt_broker_settings
    cfg = Config(group_consumer_session_timeout_ms=20000)
    adopt_broker_settings(cfg, {"group.consumer.session.timeout.ms": "10000", "group.max.size": "9"})
    assert (cfg.group_consumer_session_timeout_ms, cfg.group_max_size) == (20000, 9)
