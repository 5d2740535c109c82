"""The order of a classic group's members is the broker's `HashMap<String, ClassicGroupMember>`
(ClassicGroup.members): the leader chosen when the leader leaves (ClassicGroup.remove) or did not
rejoin (maybeElectNewJoinedLeader), the leader's JoinGroup member list and DescribeGroups follow it,
not the order members joined. Broker comparison: wire_replays/leader-after-removal-hash-order.json.
"""

from shim.coordinator import errors as E

from .harness import SESSION, Harness, java_member_order


def test_a_removed_leader_is_replaced_by_the_first_member_in_hash_order():
    h = Harness()
    # member ids a-u1, p-u2, t-u3: t-u3 iterates before p-u2
    tokens = [h.join("g", v=3, client_id=cl) for cl in ("a", "p", "t")]        # v3: members added at once
    h.advance(6_000)                             # the initial delay, extended once
    a, b, c = (h.answered(t).member_id for t in tokens)
    assert h.group("g").leader_id == a
    assert h.leave("g", (a, None), v=2).error_code == E.NONE
    assert java_member_order([b, c]) == [c, b]
    assert h.group("g").leader_id == c
    assert [m.member_id for m in h.describe("g").groups[0].members] == java_member_order([b, c])


def test_the_leader_goes_to_the_first_joined_member_in_hash_order():
    """The seed of wire_replays/leader-after-removal-hash-order.json: the leader did not rejoin and
    its session expired while two new members waited; the new leader is the first of them in hash
    order, and the member list follows that order too."""
    h = Harness()
    old = h.join("g", v=3, client_id="old")
    h.advance(3_000)
    leader = h.answered(old).member_id
    t1 = h.join("g", v=3, client_id="p")         # p-u2 joins first but iterates after t-u3
    t2 = h.join("g", v=3, client_id="t")
    h.advance(SESSION)                           # the old leader never synced: its session expires
    j1, j2 = h.answered(t1), h.answered(t2)
    assert leader not in h.group("g").members
    expected = java_member_order([j1.member_id, j2.member_id])
    assert expected[0] == j2.member_id
    assert j1.leader == j2.leader == j2.member_id
    assert [m.member_id for m in j2.members] == expected


def test_member_order_after_the_map_grew_past_twelve_members():
    h = Harness()
    tokens = [h.join("g", v=3, client_id=f"m{i}") for i in range(14)]
    h.advance(6_000)
    ids = [h.answered(t).member_id for t in tokens]
    leader_list = [m.member_id for m in h.answered(tokens[0]).members]
    assert leader_list == java_member_order(ids, table=32)
    for mid in ids[:10]:                             # the table does not shrink
        h.leave("g", (mid, None), v=2)
    rest = ids[10:]
    assert [m.member_id for m in h.describe("g").groups[0].members] == java_member_order(rest, table=32)
