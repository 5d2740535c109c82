"""The consumer-group tests' default harness: topics foo (6 partitions) and bar (3); a module needing
other topics defines its own `h`."""

import pytest

from testsuite.coordinator.consumer.harness import ConsumerHarness


@pytest.fixture
def h():
    return ConsumerHarness({"foo": 6, "bar": 3})
