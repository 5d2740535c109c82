"""shim/groupservice/configs.py without a broker: which DescribeConfigs answers become the coordinator's
per-group configs (the GROUP_CONFIG source only), which alterations are watched."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from kcodec import api
from kcodec.generated.describe_configs import (DescribeConfigsResourceResult, DescribeConfigsResponse,
                                               DescribeConfigsResult)
from kcodec.generated.incremental_alter_configs import (AlterableConfig, AlterConfigsResource,
                                                        IncrementalAlterConfigsRequest)
from shim.config import Config
from shim.groupservice.configs import GroupConfigWatcher
from shim.groupservice.runtime import GroupRuntime

GROUP, TOPIC, SET = 32, 2, 0


class _Conn:
    def __init__(self, stored: dict[str, dict[str, str]]):
        self.stored, self.asked = stored, []

    async def request(self, api_key, wanted, make):
        req = make(wanted)
        self.asked.append([r.resource_name for r in req.resources])
        return DescribeConfigsResponse(results=[DescribeConfigsResult(
            resource_type=GROUP, resource_name=r.resource_name, configs=[
                DescribeConfigsResourceResult(name="consumer.session.timeout.ms", value="45000", config_source=5),
                *(DescribeConfigsResourceResult(name=k, value=v, config_source=8)
                  for k, v in self.stored.get(r.resource_name, {}).items())])
            for r in req.resources])

    def close(self):
        pass


def _watcher(stored):
    proxy = SimpleNamespace(cfg=Config(), routes={}, topology=SimpleNamespace(brokers={}))
    runtime = GroupRuntime(Config().coordinator_config(), lambda ev: None)
    w = GroupConfigWatcher(proxy, runtime)
    w._conn = _Conn(stored)
    return w, runtime.coordinator


def test_only_the_groups_own_values_become_overrides_and_removals_are_seen():
    async def main():
        stored = {"g1": {"consumer.session.timeout.ms": "50000"}}
        w, c = _watcher(stored)
        beat = SimpleNamespace(group_id="g1", subscribed_topic_regex=None, subscribed_topic_names=None)
        assert c.needs(68, 0, beat).group_configs == ("g1",)
        await w.load(["g1", "g2", "g1"])
        assert w._conn.asked == [["g1", "g2"]]
        assert c.group_configs.get("g1").consumer_session_timeout_ms == 50000
        assert c.group_configs.get("g2") is None               # only defaults: no entry
        assert not c.needs(68, 0, beat) and "g2" in c.group_configs.read   # read, with or without overrides
        stored.clear()                                         # deleted on the broker
        await w.refresh_all()                                  # g1 has overrides: asked again
        assert c.group_configs.get("g1") is None
    asyncio.run(main())


def test_alterations_naming_groups_are_watched_not_taken():
    w, _ = _watcher({})
    w.install()
    assert w.proxy.routes[44] == w.watch_alter and w.proxy.routes[33] == w.watch_alter

    def slot_for(resources, validate_only=False):
        body = IncrementalAlterConfigsRequest(resources=resources, validate_only=validate_only).encode(1)
        hdr = api.RequestHeader(request_api_key=44, request_api_version=1, correlation_id=1, client_id="t")
        frame = hdr.encode(api.request_header_version(44, 1)) + body
        slot = SimpleNamespace(api_key=44, version=1, watch=None)
        return slot, frame
    group = AlterConfigsResource(resource_type=GROUP, resource_name="g", configs=[
        AlterableConfig(name="consumer.session.timeout.ms", config_operation=SET, value="5000")])
    topic = AlterConfigsResource(resource_type=TOPIC, resource_name="t", configs=[])
    for resources, validate_only, watched in (([group], False, True), ([topic], False, False),
                                              ([group], True, False)):
        slot, frame = slot_for(resources, validate_only)
        assert w.watch_alter(None, slot, frame) is False        # always forwarded
        assert (slot.watch is not None) == watched
