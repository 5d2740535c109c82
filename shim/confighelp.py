"""One help line per `Config` field (meaning and unit), for `kshim run --help` and its flags.

docs/kshim-run.md ("Settings") has the longer table; testsuite/test_cli_help.py fails on a field
without a line here, and on any option of any `kshim` command without help text.
"""

from __future__ import annotations

HELP: dict[str, str] = {
    "upstream": "bootstrap servers of the real Kafka cluster, host:port[,host:port...] "
                "(empty: start the local real Kafka, docs/kshim-kafka.md)",
    "listen_host": "address the client listeners bind to (0.0.0.0 for every interface)",
    "listen_port": "TCP port of the bootstrap listener clients connect to",
    "advertised_host": "host kshim puts in Metadata/FindCoordinator/DescribeCluster answers "
                       "(empty: listen_host, or 127.0.0.1 when listening on 0.0.0.0)",
    "broker_port_base": "TCP port base: broker node n is served on base+n (0: listen_port+1)",
    "max_frame_bytes": "largest request frame in bytes; larger ones close the connection "
                       "(Kafka's socket.request.max.bytes)",
    "metadata_refresh_s": "seconds between re-reads of the upstream broker list",
    "loop": "event loop: auto (uvloop when installed), asyncio or uvloop",
    "log_level": "log level: debug, info, warning or error",
    "tls_cert": "PEM certificate file for TLS on the client listeners (with --tls-key)",
    "tls_key": "PEM private key file for TLS on the client listeners (with --tls-cert)",
    "tls_client_ca": "PEM CA file: require client certificates signed by it (mTLS)",
    "upstream_tls": "connect to the upstream brokers with TLS (--no-upstream-tls: plaintext)",
    "upstream_tls_ca": "PEM CA file to verify the upstream brokers (empty: the system CAs)",
    "upstream_tls_cert": "PEM client certificate file for mTLS towards the upstream brokers",
    "upstream_tls_key": "PEM private key file for mTLS towards the upstream brokers",
    "upstream_tls_check_hostname": "check the upstream brokers' certificate host names "
                                   "(--no-upstream-tls-check-hostname: do not)",
    "upstream_sasl_mechanism": "SASL mechanism of kshim's own upstream connections: PLAIN, "
                               "SCRAM-SHA-256 or SCRAM-SHA-512 (clients' SASL passes through)",
    "upstream_sasl_username": "SASL user name of kshim's own upstream connections",
    "upstream_sasl_password": "SASL password of kshim's own upstream connections (prefer "
                              "KSHIM_UPSTREAM_SASL_PASSWORD: flags show in ps)",
    "authorizer": "authorize the group APIs kshim answers with the broker's ACLs "
                  "(--no-authorizer: do not)",
    "authorizer_super_users": "the broker's super.users, ';'-separated principals, "
                              "e.g. 'User:admin;User:kshim'",
    "authorizer_allow_everyone_if_no_acl_found": "the broker's allow.everyone.if.no.acl.found "
                                                 "(--no-...: deny when no ACL matches)",
    "authorizer_refresh_ms": "milliseconds between re-reads of the broker's ACLs (at least 100)",
    "group_coordinator": "who answers the group APIs: kshim (its own coordinator) or broker "
                         "(forwarded: a pure proxy)",
    "coordinator_version": "the Kafka release whose group coordinator kshim answers as (3.9 to 4.4); "
                           "default: the upstream broker's, learned from its ApiVersions",
    "group_initial_rebalance_delay_ms": "milliseconds the first rebalance of an empty group waits "
                                        "for more members (group.initial.rebalance.delay.ms)",
    "group_min_session_timeout_ms": "smallest session timeout a classic member may ask for, in "
                                    "milliseconds (group.min.session.timeout.ms)",
    "group_max_session_timeout_ms": "largest session timeout a classic member may ask for, in "
                                    "milliseconds (group.max.session.timeout.ms)",
    "group_max_size": "most members in one group (group.max.size)",
    "group_consumer_migration_policy": "KIP-848 online migration between the classic and consumer "
                                       "protocols: bidirectional, upgrade, downgrade or disabled "
                                       "(group.consumer.migration.policy)",
    "group_consumer_min_session_timeout_ms": "smallest session timeout a per-group consumer.session.timeout.ms "
                                             "may set, in milliseconds (group.consumer.min.session.timeout.ms)",
    "group_consumer_max_session_timeout_ms": "largest session timeout a per-group consumer.session.timeout.ms "
                                             "may set, in milliseconds (group.consumer.max.session.timeout.ms)",
    "group_consumer_min_heartbeat_interval_ms": "smallest heartbeat interval a per-group config may set, in "
                                                "milliseconds (group.consumer.min.heartbeat.interval.ms)",
    "group_consumer_max_heartbeat_interval_ms": "largest heartbeat interval a per-group config may set, in "
                                                "milliseconds (group.consumer.max.heartbeat.interval.ms)",
    "group_consumer_max_size": "most members a KIP-848 consumer group may have, a count (group.consumer.max.size)",
    "group_consumer_assignors": "server-side assignors of KIP-848 groups, comma-separated, the first the "
                                "default: uniform, range (group.consumer.assignors)",
    "group_consumer_assignment_interval_ms": "least time between two target assignments of a KIP-848 group, in "
                                             "milliseconds (group.consumer.assignment.interval.ms)",
    "group_consumer_min_assignment_interval_ms": "smallest assignment interval a per-group config may set, in "
                                                 "milliseconds (group.consumer.min.assignment.interval.ms)",
    "group_consumer_max_assignment_interval_ms": "largest assignment interval a per-group config may set, in "
                                                 "milliseconds (group.consumer.max.assignment.interval.ms)",
    "group_settings_from_broker": "read the upstream broker's group.* settings at start and use them for every "
                                  "group setting not given explicitly (--no-group-settings-from-broker: "
                                  "Kafka's defaults)",
    "group_configs_refresh_ms": "milliseconds between re-reads of the broker's per-group configs "
                                "(kafka-configs --entity-type groups); 0: only on a group's first heartbeat "
                                "and after an alteration through kshim",
    "adopt_broker_groups": "a group the broker holds (committed offsets, no live members) becomes kshim's with "
                           "its offsets on its first request (--no-adopt-broker-groups: do not; "
                           "docs/kshim-groups.md)",
    "export_on_stop": "at a clean stop, write the offsets of kshim's Empty groups back to the broker "
                      "(as kshim groups export)",
    "group_consumer_session_timeout_ms": "session timeout of KIP-848 consumer-protocol members, in "
                                         "milliseconds (group.consumer.session.timeout.ms)",
    "group_consumer_heartbeat_interval_ms": "heartbeat interval handed to KIP-848 members, in "
                                            "milliseconds (group.consumer.heartbeat.interval.ms)",
    "offset_metadata_max_bytes": "longest committed-offset metadata, in Java chars "
                                 "(offset.metadata.max.bytes)",
    "offsets_retention_minutes": "minutes committed offsets are kept after their group became "
                                 "Empty (offsets.retention.minutes)",
    "offsets_retention_check_interval_ms": "milliseconds between expiry checks of committed offsets "
                                           "(offsets.retention.check.interval.ms)",
    "group_metadata_refresh_ms": "milliseconds between re-reads of the cluster's topic list by the "
                                 "coordinator (0: only on demand)",
    "state_topic": "compacted topic on the upstream cluster holding kshim's groups and offsets "
                   "(empty: memory only; docs/state-topic.md)",
    "state_topic_partitions": "partitions of the state topic when kshim creates it (production: 50)",
    "scale_out": "several kshim instances on one state topic split its partitions "
                 "(--no-scale-out: this instance serves every group)",
    "scale_out_session_timeout_ms": "milliseconds before a dead instance's groups move to the "
                                    "others (with --scale-out)",
    "trace_dir": "directory for wire traces of every frame and coordinator event "
                 "(empty: off; docs/kshim-trace.md)",
    "trace_bodies": "also trace Produce/Fetch bodies, records as base64 (large files)",
    "trace_rotate_mb": "start a new trace file when the compressed one reaches this many MB",
    "trace_format": "trace file format: jsonl (gzip JSON lines) or parquet (pip install 'kshim[trace]')",
    "local_kafka_nodes": "nodes of the local Kafka started when no upstream is given: 1 or 3",
    "local_kafka_port": "client TCP port of node 1 of that local Kafka",
    "admin_port": "TCP port of the admin HTTP endpoint on 127.0.0.1: /metrics, /faults (0: off)",
    "log_format": "log line format: text or json (one JSON object per line)",
    "faults": "fault rules as a JSON list (shim/faultrules.py; docs/kshim-run.md)",
}
