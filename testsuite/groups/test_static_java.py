"""Static membership (KIP-345, KIP-814) with Kafka's Java VerifiableConsumer, through kshim and
directly against the real broker; the observed outcomes must agree."""

from __future__ import annotations

import pytest

from testsuite.groups.scenarios import duplicate_instance_fencing, static_bounce
from testsuite.harness.sides import both_sides


@pytest.mark.parametrize("who,bouncee", [("follower", 1), ("leader", 0)])
def test_static_bounce_causes_no_rebalance(both, names, kshim, who, bouncee):
    facts = both_sides(lambda where: static_bounce(both[where], names, bouncee, where))
    assert facts["kshim"] == facts["broker"]
    assert facts["kshim"] == {"others_saw_rebalance": False, "others_kept_partitions": True,
                              "restarted_got_old_partitions": True, "restarted_assign_events": 1}
    if who == "leader":
        assert "static_rejoin_without_rebalance" in kshim.log_text() and "skip_assignment=True" in kshim.log_text()


def test_duplicate_instance_id_is_fenced(both, names):
    facts = both_sides(lambda where: duplicate_instance_fencing(both[where], names))
    assert facts["kshim"] == facts["broker"]
    assert facts["kshim"]["first_stopped"] and facts["kshim"]["second_running"]
