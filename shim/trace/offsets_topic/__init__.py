"""The group coordinator's own records (`__consumer_offsets`) as a source of the rebalance analysis
(`kshim trace import --consumer-offsets` / `--log-dir`): decoded with the generated codec of Kafka's
record schemas, turned into the coordinator events kshim's traces carry (docs/kshim-trace-import.md)."""
