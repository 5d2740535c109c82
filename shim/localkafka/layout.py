"""Turns a folder of jars into a release-shaped Kafka: bin/ wrappers and config/ files.

Run by scripts/setup after Maven has copied the jars: `python -m shim.localkafka.layout HOME`.
The wrappers are our own thin scripts; they only name Kafka's main classes.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

# script name -> main class (kafka_2.13 holds the first two, kafka-tools the rest)
TOOLS: dict[str, str] = {
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-server-start": "kafka.Kafka",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    # KIP-932 share groups, KIP-1071 streams groups (kafka-tools 4.3.1 and later)
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
}

# The class a tool had in releases before the pinned one (ConfigCommand moved to kafka-tools in 4.4).
EARLIER_MAIN: dict[str, str] = {"kafka-configs": "kafka.admin.ConfigCommand"}


def tool_main(libs: Path, tool: str) -> str:
    """The main class of `tool` in the release whose jars are in `libs` (TOOLS, else its earlier
    class when that release's jars have it); a main class is returned as given."""
    main = TOOLS.get(tool, tool)
    earlier = EARLIER_MAIN.get(tool)
    if earlier is None:
        return main
    wanted = main.replace(".", "/") + ".class"
    for jar in sorted(libs.glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as z:
            if wanted in z.namelist():
                return main
    return earlier


_LOG4J_BASE = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.appenderRef.out.ref = OUT
"""

LOG4J_BROKER = _LOG4J_BASE + """\
rootLogger.level = INFO
logger.req.name = kafka.request.logger
logger.req.level = WARN
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = WARN
"""

# Tools print JSON events on stdout, so their logs must go to stderr.
LOG4J_TOOLS = _LOG4J_BASE + """\
appender.out.target = SYSTEM_ERR
rootLogger.level = WARN
"""

_WRAPPER = """\
#!/bin/sh
# kshim: thin wrapper (our own) running Kafka's {main}
HERE="$(cd "$(dirname "$0")/.." && pwd)"
JAVA="${{JAVA_HOME:+$JAVA_HOME/bin/}}java"
exec "$JAVA" ${{KAFKA_HEAP_OPTS:--Xmx256m}} -XX:+UseSerialGC -Djava.awt.headless=true \\
  -Dlog4j2.configurationFile="$HERE/config/log4j2-{log4j}.properties" \\
  -cp "${{CLASSPATH:+$CLASSPATH:}}$HERE/libs/*" {main} "$@"
"""

_RUN_CLASS = """\
#!/bin/sh
# kshim: thin wrapper (our own), like Kafka's kafka-run-class.sh
HERE="$(cd "$(dirname "$0")/.." && pwd)"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
exec "$JAVA" ${KAFKA_HEAP_OPTS:--Xmx256m} -Djava.awt.headless=true \\
  -Dlog4j2.configurationFile="$HERE/config/log4j2-tools.properties" \\
  -cp "${CLASSPATH:+$CLASSPATH:}$HERE/libs/*" "$@"
"""


def write_layout(home: Path) -> None:
    bin_dir, cfg = home / "bin", home / "config"
    bin_dir.mkdir(parents=True, exist_ok=True)
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "log4j2-broker.properties").write_text(LOG4J_BROKER)
    (cfg / "log4j2-tools.properties").write_text(LOG4J_TOOLS)
    for name in TOOLS:
        main = tool_main(home / "libs", name)
        log4j = "broker" if name == "kafka-server-start" else "tools"
        path = bin_dir / f"{name}.sh"
        path.write_text(_WRAPPER.format(main=main, log4j=log4j))
        path.chmod(0o755)
    run_class = bin_dir / "kafka-run-class.sh"
    run_class.write_text(_RUN_CLASS)
    run_class.chmod(0o755)


if __name__ == "__main__":
    write_layout(Path(sys.argv[1]))
    print(f"Kafka layout written in {sys.argv[1]}")
