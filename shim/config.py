"""kshim's configuration: defaults < config file (TOML or YAML) < environment (KSHIM_*) < flags.

Every field of `Config` can be set in all four places: the file uses the field name
(`listen_port = 9092`), the environment `KSHIM_<FIELD>` in upper case (`KSHIM_LISTEN_PORT=9092`),
the command line `--listen-port 9092`. See docs/kshim-run.md for the table.
"""

from __future__ import annotations

import dataclasses
import operator
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key and the fix."""


@dataclass
class Config:
    # upstream cluster ("" = start the local real Kafka, see docs/kshim-kafka.md)
    upstream: str = ""
    # client-facing listeners
    listen_host: str = "127.0.0.1"
    listen_port: int = 9092
    advertised_host: str = ""            # default: listen_host (or 127.0.0.1 when listening on 0.0.0.0)
    broker_port_base: int = 0            # node n is served on broker_port_base + n; default listen_port + 1
    max_frame_bytes: int = 104_857_600   # Kafka's socket.request.max.bytes
    metadata_refresh_s: float = 10.0     # how often kshim re-reads the upstream topology
    loop: str = "auto"                   # asyncio event loop: auto (uvloop if installed), asyncio, uvloop
    log_level: str = "info"
    # TLS on the client listeners
    tls_cert: str = ""
    tls_key: str = ""
    tls_client_ca: str = ""              # require client certificates signed by this CA (mTLS)
    # TLS towards the upstream brokers
    upstream_tls: bool = False
    upstream_tls_ca: str = ""
    upstream_tls_cert: str = ""
    upstream_tls_key: str = ""
    upstream_tls_check_hostname: bool = True
    # SASL for kshim's own upstream connections (clients' SASL is passed through untouched)
    upstream_sasl_mechanism: str = ""    # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    upstream_sasl_username: str = ""
    upstream_sasl_password: str = field(default="", repr=False)
    # authorization of the group APIs kshim answers, from the broker's ACLs (docs/kshim-run.md)
    authorizer: bool = False             # needs DESCRIBE on the CLUSTER for kshim's upstream principal
    authorizer_super_users: str = ""     # the broker's super.users, e.g. "User:admin;User:kshim"
    authorizer_allow_everyone_if_no_acl_found: bool = False   # the broker's allow.everyone.if.no.acl.found
    authorizer_refresh_ms: int = 5000    # how often the ACLs are read again (DescribeAcls)
    # group coordinator: "kshim" answers the group APIs itself; "broker" forwards them (pure proxy)
    group_coordinator: str = "kshim"
    # the Kafka release whose group coordinator kshim answers as: "" = the upstream broker's, learned
    # from its ApiVersions at start (shim/coordinator/releases.py); 3.9, 4.0, ... 4.4 to choose one
    coordinator_version: str = ""
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = 2147483647
    # KIP-848 online migration (group.consumer.migration.policy): bidirectional, upgrade, downgrade, disabled
    group_consumer_migration_policy: str = "bidirectional"
    group_consumer_session_timeout_ms: int = 45000      # the broker's group.consumer.session.timeout.ms
    group_consumer_heartbeat_interval_ms: int = 5000    # the broker's group.consumer.heartbeat.interval.ms
    group_consumer_min_session_timeout_ms: int = 45000  # bounds of the per-group consumer.* configs
    group_consumer_max_session_timeout_ms: int = 60000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15000
    group_consumer_max_size: int = 2147483647
    group_consumer_assignors: str = "uniform,range"     # server-side assignors, first = default
    group_consumer_assignment_interval_ms: int = 1000
    group_consumer_min_assignment_interval_ms: int = 0
    group_consumer_max_assignment_interval_ms: int = 15000
    # the settings above named after a broker property (BROKER_GROUP_SETTINGS) and not given take the
    # upstream broker's values, read at start (DescribeConfigs); the broker's per-group configs
    # (kafka-configs --entity-type groups) are re-read every group_configs_refresh_ms (0 = only when
    # an alteration passes through kshim and on a group's first heartbeat)
    group_settings_from_broker: bool = True
    group_configs_refresh_ms: int = 5000
    offset_metadata_max_bytes: int = 4096
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    group_metadata_refresh_ms: int = 1000  # how often the coordinator re-reads the topic list (0 = never)
    # durable group state: kshim's compacted topic on the upstream cluster ("" = memory only)
    state_topic: str = "__kshim_group_state"
    state_topic_partitions: int = 4      # used when kshim creates the topic; production: 50
    # several kshim instances sharing one state topic split its partitions (docs/state-topic.md)
    scale_out: bool = False
    scale_out_session_timeout_ms: int = 10000   # failover time of a dead instance's groups
    # a group the broker held (offsets, no live members) becomes kshim's with its offsets on its first request
    adopt_broker_groups: bool = True
    # at a clean stop, write the offsets of kshim's Empty groups back to the broker (`kshim groups export`)
    export_on_stop: bool = False
    # wire traces (docs/kshim-trace.md): "" = off
    trace_dir: str = ""
    trace_bodies: bool = False           # also Produce/Fetch bodies (records as base64): large
    trace_rotate_mb: float = 64.0        # start a new file when the compressed one reaches this size
    trace_format: str = "jsonl"          # jsonl (gzip JSON lines) or parquet (needs kshim[trace])
    # local Kafka, when no upstream is given
    local_kafka_nodes: int = 1
    local_kafka_port: int = 19092
    # hardening: the admin HTTP endpoint (127.0.0.1 only; /metrics, /faults; 0 = off), log format,
    # fault rules (a [[faults]] list in the file, JSON in KSHIM_FAULTS / --faults; shim/faultrules.py)
    admin_port: int = 0
    log_format: str = "text"             # text or json (one JSON object per line)
    faults: list = field(default_factory=list)
    # not settings: which fields were given (file, environment, flags; None = constructed directly,
    # then the fields that differ from their defaults) and which took the broker's value at start
    explicit: ClassVar[frozenset | None] = None
    adopted: ClassVar[dict] = {}

    # ------------------------------------------------------------------ derived
    @property
    def advertised(self) -> str:
        if self.advertised_host:
            return self.advertised_host
        return "127.0.0.1" if self.listen_host in ("0.0.0.0", "", "::") else self.listen_host

    @property
    def broker_base(self) -> int:
        return self.broker_port_base or self.listen_port + 1

    def coordinator_config(self):
        from .coordinator import CoordinatorConfig
        return CoordinatorConfig(
            initial_rebalance_delay_ms=self.group_initial_rebalance_delay_ms,
            min_session_timeout_ms=self.group_min_session_timeout_ms,
            max_session_timeout_ms=self.group_max_session_timeout_ms, max_size=self.group_max_size,
            offset_metadata_max_bytes=self.offset_metadata_max_bytes,
            offsets_retention_ms=self.offsets_retention_minutes * 60_000,
            offsets_retention_check_interval_ms=self.offsets_retention_check_interval_ms,
            consumer_migration_policy=self.group_consumer_migration_policy.lower(),
            consumer_session_timeout_ms=self.group_consumer_session_timeout_ms,
            consumer_heartbeat_interval_ms=self.group_consumer_heartbeat_interval_ms,
            consumer_min_session_timeout_ms=self.group_consumer_min_session_timeout_ms,
            consumer_max_session_timeout_ms=self.group_consumer_max_session_timeout_ms,
            consumer_min_heartbeat_interval_ms=self.group_consumer_min_heartbeat_interval_ms,
            consumer_max_heartbeat_interval_ms=self.group_consumer_max_heartbeat_interval_ms,
            consumer_max_size=self.group_consumer_max_size,
            consumer_assignors=assignor_names(self.group_consumer_assignors),
            consumer_assignment_interval_ms=self.group_consumer_assignment_interval_ms,
            consumer_min_assignment_interval_ms=self.group_consumer_min_assignment_interval_ms,
            consumer_max_assignment_interval_ms=self.group_consumer_max_assignment_interval_ms)

    def given(self) -> frozenset:
        """The fields set explicitly (they win over the broker's values)."""
        if self.explicit is not None:
            return self.explicit
        return frozenset(f.name for f in fields(self) if f.default is not dataclasses.MISSING
                         and getattr(self, f.name) != f.default)

    def upstream_addresses(self) -> list[tuple[str, int]]:
        out = []
        for item in filter(None, (s.strip() for s in self.upstream.split(","))):
            host, sep, port = item.rpartition(":")
            if not sep or not port.isdigit():
                raise ConfigError(f"upstream: {item!r} is not host:port (e.g. --upstream 127.0.0.1:19092)")
            out.append((host.strip("[]"), int(port)))
        return out

    def validate(self) -> "Config":
        if not 0 < self.listen_port < 65536:
            raise ConfigError(f"listen_port {self.listen_port} is not a TCP port: use 1-65535")
        if self.max_frame_bytes < 1024:
            raise ConfigError("max_frame_bytes must be at least 1024 (the default is 104857600)")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ConfigError("tls_cert and tls_key go together: give both or neither")
        if self.upstream_sasl_mechanism and self.upstream_sasl_mechanism.upper() not in (
                "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise ConfigError(f"upstream_sasl_mechanism {self.upstream_sasl_mechanism!r}: "
                              "use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
        if self.authorizer_refresh_ms < 100:
            raise ConfigError("authorizer_refresh_ms must be at least 100")
        if self.group_coordinator not in ("kshim", "broker"):
            raise ConfigError(f"group_coordinator {self.group_coordinator!r}: use kshim or broker")
        from .coordinator.releases import RELEASES
        if self.coordinator_version and self.coordinator_version not in RELEASES:
            raise ConfigError(f"coordinator_version {self.coordinator_version!r}: use one of {', '.join(RELEASES)} "
                              "(or leave it out to follow the upstream broker's release)")
        if self.group_consumer_migration_policy.lower() not in ("bidirectional", "upgrade", "downgrade", "disabled"):
            raise ConfigError(f"group_consumer_migration_policy {self.group_consumer_migration_policy!r}: "
                              "use bidirectional, upgrade, downgrade or disabled")
        assignor_names(self.group_consumer_assignors)
        if self.group_configs_refresh_ms < 0:
            raise ConfigError("group_configs_refresh_ms must be 0 (off) or positive")
        if self.state_topic_partitions < 1:
            raise ConfigError("state_topic_partitions must be at least 1")
        if self.scale_out and not self.state_topic:
            raise ConfigError("scale_out needs a state_topic (the instances split its partitions)")
        if self.loop not in ("auto", "asyncio", "uvloop"):
            raise ConfigError(f"loop {self.loop!r}: use auto, asyncio or uvloop")
        if self.trace_format not in ("jsonl", "parquet"):
            raise ConfigError(f"trace_format {self.trace_format!r}: use jsonl or parquet")
        if self.trace_format == "parquet" and self.trace_dir:
            from .trace.sink import parquet_available
            if not parquet_available():
                raise ConfigError("trace_format parquet needs pyarrow: pip install 'kshim[trace]'")
        if self.trace_rotate_mb <= 0:
            raise ConfigError("trace_rotate_mb must be positive")
        if self.log_format not in ("text", "json"):
            raise ConfigError(f"log_format {self.log_format!r}: use text or json")
        if not 0 <= self.admin_port < 65536:
            raise ConfigError(f"admin_port {self.admin_port} is not a TCP port: use 1-65535, or 0 for off")
        from .faultrules import FaultError, parse_rules
        try:
            parse_rules(self.faults)
        except FaultError as e:
            raise ConfigError(f"faults: {e}") from None
        self.upstream_addresses()
        return self


FIELDS = {f.name: f for f in fields(Config)}

# The settings that are the broker's group coordinator properties under the same name with "." for
# "_" (GroupCoordinatorConfig); at start each one not given takes the upstream broker's value.
BROKER_GROUP_SETTINGS = (
    "group_initial_rebalance_delay_ms", "group_min_session_timeout_ms", "group_max_session_timeout_ms",
    "group_max_size", "group_consumer_migration_policy", "group_consumer_session_timeout_ms",
    "group_consumer_heartbeat_interval_ms", "group_consumer_min_session_timeout_ms",
    "group_consumer_max_session_timeout_ms", "group_consumer_min_heartbeat_interval_ms",
    "group_consumer_max_heartbeat_interval_ms", "group_consumer_max_size", "group_consumer_assignors",
    "group_consumer_assignment_interval_ms", "group_consumer_min_assignment_interval_ms",
    "group_consumer_max_assignment_interval_ms", "offset_metadata_max_bytes", "offsets_retention_minutes",
    "offsets_retention_check_interval_ms")
# GroupCoordinatorConfig.CONSUMER_GROUP_BUILTIN_ASSIGNORS, by name or class (the only ones kshim runs)
_ASSIGNORS = {"uniform": "uniform", "range": "range",
              "org.apache.kafka.coordinator.group.assignor.uniformassignor": "uniform",
              "org.apache.kafka.coordinator.group.assignor.rangeassignor": "range"}


def broker_property(name: str) -> str:
    return name.replace("_", ".")


def assignor_names(text: str) -> tuple[str, ...]:
    """group.consumer.assignors: a list of names or classes; kshim has the builtin ones."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    out = []
    for n in names:
        if n.lower() not in _ASSIGNORS:
            raise ConfigError(f"group_consumer_assignors: {n!r} is not an assignor kshim has (uniform, range)")
        if _ASSIGNORS[n.lower()] not in out:
            out.append(_ASSIGNORS[n.lower()])
    if not out:
        raise ConfigError("group_consumer_assignors: give at least one of uniform, range")
    return tuple(out)


def adopt_broker_settings(cfg: Config, broker: dict[str, str]) -> dict[str, Any]:
    """Take the broker's values (property -> value, DescribeConfigs of a BROKER resource) for every
    BROKER_GROUP_SETTINGS field not given; returns (and keeps in `cfg.adopted`) the fields adopted.
    A value kshim cannot use (an assignor it does not have) is skipped, with the reason kept under
    `cfg.adopted["skipped"]`; a given value that differs from the broker's is listed under "kept"."""
    given, adopted, skipped, kept = cfg.given(), {}, {}, {}
    for name in BROKER_GROUP_SETTINGS:
        raw = broker.get(broker_property(name))
        if raw is None:
            continue
        if name in given:
            if str(getattr(cfg, name)) != raw:
                kept[name] = (getattr(cfg, name), raw)
            continue
        try:
            value = _coerce(name, raw)
            if name == "group_consumer_assignors":
                value = ",".join(assignor_names(value))
            elif name == "group_consumer_migration_policy":
                value = value.lower()
        except ConfigError as e:
            skipped[name] = str(e)
            continue
        setattr(cfg, name, value)
        adopted[name] = value
    cfg.adopted = dict(adopted, **({"skipped": skipped} if skipped else {}), **({"kept": kept} if kept else {}))
    return adopted


def check_group_bounds(cfg: Config) -> None:
    """GroupCoordinatorConfig's constructor checks (`require`) of the consumer group settings."""
    rel = {">=": (operator.ge, "greater than or equal to"), "<=": (operator.le, "less than or equal to"),
           "<": (operator.lt, "less than")}
    for a, op, b in (("max_heartbeat_interval_ms", ">=", "min_heartbeat_interval_ms"),
                     ("heartbeat_interval_ms", ">=", "min_heartbeat_interval_ms"),
                     ("heartbeat_interval_ms", "<=", "max_heartbeat_interval_ms"),
                     ("max_session_timeout_ms", ">=", "min_session_timeout_ms"),
                     ("session_timeout_ms", ">=", "min_session_timeout_ms"),
                     ("session_timeout_ms", "<=", "max_session_timeout_ms"),
                     ("heartbeat_interval_ms", "<", "session_timeout_ms"),
                     ("max_assignment_interval_ms", ">=", "min_assignment_interval_ms"),
                     ("assignment_interval_ms", ">=", "min_assignment_interval_ms"),
                     ("assignment_interval_ms", "<=", "max_assignment_interval_ms")):
        a, b = "group_consumer_" + a, "group_consumer_" + b
        test, words = rel[op]
        if not test(getattr(cfg, a), getattr(cfg, b)):
            from_broker = [n for n in (a, b) if n in cfg.adopted]
            raise ConfigError(f"{a} ({getattr(cfg, a)}) must be {words} {b} ({getattr(cfg, b)})"
                              + (f"; adopted from the broker: {', '.join(from_broker)}" if from_broker else ""))


def _coerce(name: str, value: Any) -> Any:
    kind = type(getattr(Config(), name))
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    text = str(value).strip()
    if kind is list:   # JSON from the environment or a flag
        import json
        try:
            value = json.loads(text) if text else []
        except ValueError:
            raise ConfigError(f"{name}: {text!r} is not valid JSON") from None
        return value if isinstance(value, list) else [value]
    try:
        if kind is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(text)
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
    except ValueError:
        raise ConfigError(f"{name}: {value!r} is not a valid {kind.__name__}") from None
    return text


def load_file(path: Path) -> dict[str, Any]:
    text = path.read_text()
    if path.suffix in (".yaml", ".yml"):
        import yaml
        data = yaml.safe_load(text) or {}
    else:
        import tomllib
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table of settings")
    data = data.get("kshim", data)  # allow a [kshim] table
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(FIELDS)}")
    return data


def load(file: Path | None = None, flags: dict[str, Any] | None = None,
         environ: dict[str, str] | None = None) -> Config:
    values: dict[str, Any] = {}
    if file is not None:
        values.update(load_file(Path(file)))
    env = os.environ if environ is None else environ
    for name in FIELDS:
        key = f"KSHIM_{name.upper()}"
        if key in env:
            values[name] = env[key]
    for name, value in (flags or {}).items():
        if value is not None:
            values[name] = value
    cfg = Config(**{k: _coerce(k, v) for k, v in values.items()})
    cfg.explicit = frozenset(values)
    return cfg.validate()


def add_flags(parser, only=None) -> None:
    """One --flag per Config field (value None = not given, so lower layers show through); the help
    line (meaning and unit) comes from shim/confighelp.py. `only`: just these fields."""
    from .confighelp import HELP
    for f in fields(Config):
        if only is not None and f.name not in only:
            continue
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        shown = ("" if f.name == "upstream_sasl_password" else
                 f" (default: the upstream broker's {broker_property(f.name)}, else {default!r})"
                 if f.name in BROKER_GROUP_SETTINGS else f" (default {default!r})")
        text = HELP[f.name] + shown
        if isinstance(default, bool):
            parser.add_argument(flag, dest=f.name, default=None, action="store_const", const=True, help=text)
            parser.add_argument("--no-" + f.name.replace("_", "-"), dest=f.name, action="store_const", const=False,
                                help=argparse_suppress())
        else:
            parser.add_argument(flag, dest=f.name, default=None, type=str if isinstance(default, list) else type(default),
                                metavar=_METAVAR.get(type(default), "TEXT"), help=text)


_METAVAR = {int: "N", float: "X", list: "JSON"}


def argparse_suppress():
    import argparse
    return argparse.SUPPRESS


def flags_from_args(args) -> dict[str, Any]:
    return {name: getattr(args, name, None) for name in FIELDS}
