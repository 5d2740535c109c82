"""classic_group.validate_offset_commit on its own, as Kafka's ClassicGroupTest.testValidateOffsetCommit
tests ClassicGroup.validateOffsetCommit: every error of an OffsetCommit (`is_transactional` False)
and of a TxnOffsetCommit, in the order the checks run, the ones that depend on the request version
too, and a group that does not exist (OffsetMetadataManager.validateOffsetCommit /
validateTransactionalOffsetCommit)."""

import pytest

from shim.coordinator import errors as E
from shim.coordinator.classic_group import (COMPLETING, DEAD, EMPTY, PREPARING, STABLE, ClassicGroup, ClassicMember,
                                            validate_offset_commit)

COMMIT_V, TXN_V = 10, 6          # the newest versions: every field present
GEN = 3


def group(state: str = STABLE, members=(("m1", None), ("m2", "i2"))) -> ClassicGroup:
    """Group "g" at generation GEN with a dynamic member m1 and a static member m2 (instance i2)."""
    g = ClassicGroup("g", generation_id=GEN)
    for mid, iid in members:
        g.add(ClassicMember(mid, iid, "client", "/127.0.0.1", 30000, 10000, "consumer", [("range", b"")]))
    g.state = state
    return g


def check(g, member_id="", instance_id=None, generation=-1, txn=False, v=None, scala=False) -> int:
    return validate_offset_commit(g, member_id, instance_id, generation, txn, v if v is not None
                                  else (TXN_V if txn else COMMIT_V), scala)


BOTH = pytest.mark.parametrize("txn", [False, True], ids=["commit", "txn"])


# ---------------------------------------------------------------- the same for both
@BOTH
def test_dead_group_is_coordinator_not_available_before_anything_else(txn):
    assert check(group(DEAD), "nobody", "i9", 99, txn) == E.COORDINATOR_NOT_AVAILABLE
    assert check(group(DEAD), txn=txn) == E.COORDINATOR_NOT_AVAILABLE


@BOTH
def test_empty_group_accepts_a_commit_without_generation_whatever_the_ids(txn):
    g = group(EMPTY, members=())
    assert check(g, txn=txn) == E.NONE
    assert check(g, "m1", "i1", -1, txn) == E.NONE      # the generation check comes first


@BOTH
@pytest.mark.parametrize("state", [STABLE, PREPARING])
def test_a_member_at_the_generation_is_accepted(txn, state):
    assert check(group(state), "m1", None, GEN, txn) == E.NONE
    assert check(group(state), "m2", "i2", GEN, txn) == E.NONE


@BOTH
@pytest.mark.parametrize("member_id,instance_id,generation", [
    ("m9", None, GEN),       # not a member
    ("m1", "i9", GEN),       # an instance id nobody holds
    ("m9", None, GEN + 1),   # unknown member before the generation
    ("", None, GEN),         # a generation without a member id
    ("", "i2", -1),          # an instance id without its member id... is fenced, not unknown
])
def test_unknown_member(txn, member_id, instance_id, generation):
    want = E.FENCED_INSTANCE_ID if instance_id == "i2" else E.UNKNOWN_MEMBER_ID
    assert check(group(), member_id, instance_id, generation, txn) == want


@BOTH
def test_member_id_without_generation_is_illegal_generation(txn):
    assert check(group(), "m1", None, -1, txn) == E.ILLEGAL_GENERATION


@BOTH
def test_instance_id_held_by_another_member_is_fenced_before_the_generation(txn):
    assert check(group(), "m1", "i2", GEN + 1, txn) == E.FENCED_INSTANCE_ID


@BOTH
def test_another_generation_is_illegal_generation(txn):
    assert check(group(), "m1", None, GEN + 1, txn) == E.ILLEGAL_GENERATION
    assert check(group(), "m2", "i2", GEN - 1, txn) == E.ILLEGAL_GENERATION


@BOTH
def test_empty_group_with_a_generation_checks_the_member(txn):
    assert check(group(EMPTY, members=()), "m1", None, 0, txn) == E.UNKNOWN_MEMBER_ID


# ---------------------------------------------------------------- where they differ
@pytest.mark.parametrize("state", [STABLE, PREPARING, COMPLETING])
def test_no_identity_on_a_group_with_members(state):
    """Only an Empty group takes a plain OffsetCommit; a transactional one is taken in any state."""
    assert check(group(state)) == E.UNKNOWN_MEMBER_ID
    assert check(group(state), txn=True) == E.NONE


def test_completing_rebalance():
    """A member's OffsetCommit is REBALANCE_IN_PROGRESS while the group completes a rebalance, after
    the member checks; the group's state does not matter to a TxnOffsetCommit."""
    assert check(group(COMPLETING), "m1", None, GEN) == E.REBALANCE_IN_PROGRESS
    assert check(group(COMPLETING), "m2", "i2", GEN) == E.REBALANCE_IN_PROGRESS
    assert check(group(COMPLETING), "m1", None, GEN + 1) == E.ILLEGAL_GENERATION
    assert check(group(COMPLETING), "m1", None, GEN, txn=True) == E.NONE


# ---------------------------------------------------------------- by version
@pytest.mark.parametrize("v", range(2, 11))
def test_commit_group_instance_id_counts_from_v7(v):
    assert check(group(), "m1", "i2", GEN, v=v) == (E.FENCED_INSTANCE_ID if v >= 7 else E.NONE)
    assert check(group(), "m2", "i9", GEN, v=v) == (E.UNKNOWN_MEMBER_ID if v >= 7 else E.NONE)


@pytest.mark.parametrize("v", range(0, 7))
def test_txn_member_fields_count_from_v3(v):
    """Before v3 a TxnOffsetCommit carries no member id, generation or instance id: all are ignored."""
    assert check(group(), "m9", None, GEN, txn=True, v=v) == (E.NONE if v < 3 else E.UNKNOWN_MEMBER_ID)
    assert check(group(), "m1", "i2", GEN, txn=True, v=v) == (E.NONE if v < 3 else E.FENCED_INSTANCE_ID)
    assert check(group(), "m1", None, GEN + 1, txn=True, v=v) == (E.NONE if v < 3 else E.ILLEGAL_GENERATION)
    assert check(group(DEAD), "m1", None, GEN, txn=True, v=v) == E.COORDINATOR_NOT_AVAILABLE


# ---------------------------------------------------------------- no such group
@BOTH
@pytest.mark.parametrize("scala", [False, True])
def test_missing_group_without_generation_may_be_created(txn, scala):
    assert check(None, txn=txn, scala=scala) == E.NONE
    assert check(None, "m1", "i1", -1, txn, scala=scala) == E.NONE


@pytest.mark.parametrize("v", range(2, 11))
def test_commit_to_missing_group_with_a_generation(v):
    assert check(None, "m1", None, GEN, v=v) == (E.GROUP_ID_NOT_FOUND if v >= 9 else E.ILLEGAL_GENERATION)
    assert check(None, "m1", None, GEN, v=v, scala=True) == E.ILLEGAL_GENERATION   # Kafka 3.9


@pytest.mark.parametrize("v", range(0, 7))
def test_txn_commit_to_missing_group_with_a_generation(v):
    """GROUP_ID_NOT_FOUND from v6 (TxnOffsetCommitRequest.supportsGroupIdNotFoundError); before v3 the
    request has no generation: the group may be created."""
    want = E.NONE if v < 3 else E.GROUP_ID_NOT_FOUND if v >= 6 else E.ILLEGAL_GENERATION
    assert check(None, "m1", None, GEN, txn=True, v=v) == want


def test_validation_changes_nothing():
    g = group(COMPLETING)
    before = (g.state, g.generation_id, dict(g.members), dict(g.static_members), set(g.pending_members))
    for txn in (False, True):
        check(g, "m1", None, GEN, txn)
        check(g, "m9", "i9", GEN + 1, txn)
    assert (g.state, g.generation_id, dict(g.members), dict(g.static_members), set(g.pending_members)) == before
