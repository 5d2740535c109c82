"""shim/coordinator/releases.py: a broker's release told from its ApiVersions, and the group API ranges
kshim then advertises (shim/proxy/server.py, versions.py). The ApiVersions below are what real brokers
of each release answered (Kafka 3.9.1, 4.0.2, 4.1.2, 4.2.1, 4.3.1, 4.4.0 from Maven Central); the
matrix test (testsuite/groups/test_version_matrix.py) checks the same against running brokers."""

from __future__ import annotations

import pytest

from kcodec import api
from shim.config import Config, ConfigError
from shim.coordinator.dispatch import VERSIONS as COORDINATOR_VERSIONS
from shim.coordinator.releases import GROUP_RANGES, NEWEST, RELEASES, at_least, identify
from shim.proxy.server import Proxy

# (key: (min, max)) of the APIs that tell releases apart, as each broker advertised them
SEEN = {
    "3.9": {0: (0, 11), 1: (0, 17), 2: (0, 9), 15: (0, 5), 35: (0, 4), 18: (0, 4)},
    "4.0": {0: (0, 12), 1: (4, 17), 2: (1, 10), 15: (0, 6), 35: (1, 4), 18: (0, 4)},
    "4.1": {0: (0, 13), 1: (4, 18), 2: (1, 10), 15: (0, 6), 35: (1, 4), 18: (0, 4)},
    "4.2": {0: (0, 13), 1: (4, 18), 2: (1, 11), 15: (0, 6), 35: (1, 4), 18: (0, 4)},
    "4.3": {0: (0, 13), 1: (4, 18), 2: (1, 11), 15: (0, 6), 35: (1, 5), 18: (0, 4)},
    "4.4": {0: (0, 13), 1: (4, 18), 2: (1, 11), 15: (0, 6), 35: (1, 5), 18: (0, 5)},
}


@pytest.mark.parametrize("release", RELEASES)
def test_each_release_is_told_apart(release):
    assert identify(SEEN[release]) == release


def test_an_older_broker_is_not_identified():
    kafka_38 = {0: (0, 11), 1: (0, 16), 2: (0, 8), 15: (0, 5), 35: (0, 4), 18: (0, 3)}
    assert identify(kafka_38) is None and identify({}) is None


def test_the_newest_release_is_the_coordinators_own():
    assert GROUP_RANGES[NEWEST] == COORDINATOR_VERSIONS


def test_release_order():
    assert at_least("4.4", "4.0") and at_least("4.0", "4.0") and not at_least("3.9", "4.0")


def _advertised(release_seen: str, override: str = ""):
    """What kshim advertises in front of a broker advertising GROUP_RANGES[release_seen]."""
    p = Proxy(Config(upstream="127.0.0.1:1", coordinator_version=override))
    p.groups = type("G", (), {"coordinator": type("C", (), {"cfg": type("Cfg", (), {})()})()})()
    p.local_versions.update(COORDINATOR_VERSIONS)
    broker = {**SEEN[release_seen], **GROUP_RANGES[release_seen]}
    p.release = p._release(broker)
    p._set_allowed(broker)
    return p, {k: p.allowed[k] for k in COORDINATOR_VERSIONS if k in p.allowed}


@pytest.mark.parametrize("release", RELEASES)
def test_group_apis_advertised_as_the_release(release):
    p, advertised = _advertised(release)
    assert p.release == release and p.groups.coordinator.cfg.release == release
    expected = dict(GROUP_RANGES[release])
    if release == "3.9":
        # the one listed difference: the 4.4 schemas no longer define OffsetCommit v0-1 and OffsetFetch
        # v0 (removed in Kafka 4.0, KIP-896), so the codec cannot read them
        expected[8], expected[9] = (2, 9), (1, 9)
        assert api.VERSIONS[8][0] == 2 and api.VERSIONS[9][0] == 1
    assert advertised == expected
    assert p.rewriter.local_versions[28] == expected[28]     # clients' ApiVersions say the same


def test_coordinator_version_narrows_to_that_release():
    p, advertised = _advertised("4.4", override="4.3")
    assert p.release == "4.3" and advertised[28] == (0, 5) and advertised[42] == (0, 2)


def test_unidentified_upstream_refused_with_the_override_named():
    p = Proxy(Config(upstream="127.0.0.1:1"))
    p.groups = object()
    with pytest.raises(ConfigError, match="coordinator-version"):
        p._release({1: (0, 16), 18: (0, 3)})
    with pytest.raises(ConfigError, match="coordinator_version '5.0'"):
        Config(upstream="127.0.0.1:1", coordinator_version="5.0").validate()
