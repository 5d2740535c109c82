"""Every bin/ wrapper of the release-shaped Kafka names a main class that exists in the resolved jars
(shim/localkafka/layout.py TOOLS; e.g. KIP-932's ShareGroupCommand, KIP-1071's StreamsGroupCommand)."""

from __future__ import annotations

import zipfile

import pytest

from shim.localkafka import install
from shim.localkafka.home import EnvironmentProblem
from shim.localkafka.layout import EARLIER_MAIN, TOOLS, tool_main


def _classes_in_jars() -> set[str]:
    try:
        kafka = install()
    except EnvironmentProblem as e:
        pytest.skip(str(e))
    names: set[str] = set()
    for jar in kafka.libs.glob("*.jar"):
        with zipfile.ZipFile(jar) as z:
            names.update(n[:-len(".class")].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
    return names


def test_every_tool_main_class_is_in_the_jars():
    classes = _classes_in_jars()
    missing = {script: main for script, main in TOOLS.items() if main not in classes}
    assert missing == {}
    assert tool_main(install().libs, "kafka-configs") == TOOLS["kafka-configs"]


def test_an_earlier_release_gets_its_own_class(tmp_path):
    """A release whose jars lack the pinned main class (ConfigCommand before 4.4) runs its own."""
    with zipfile.ZipFile(tmp_path / "kafka_2.13-4.3.1.jar", "w") as z:
        z.writestr("kafka/admin/ConfigCommand.class", b"")
    assert tool_main(tmp_path, "kafka-configs") == EARLIER_MAIN["kafka-configs"] == "kafka.admin.ConfigCommand"
    assert tool_main(tmp_path, "kafka-topics") == TOOLS["kafka-topics"]


def test_share_and_streams_group_tools_are_offered():
    assert TOOLS["kafka-share-groups"] == "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
    assert TOOLS["kafka-streams-groups"] == "org.apache.kafka.tools.streams.StreamsGroupCommand"
    assert TOOLS["kafka-console-share-consumer"] == "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
