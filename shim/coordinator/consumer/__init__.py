"""KIP-848 consumer groups: ConsumerGroupHeartbeat (heartbeat.py), ConsumerGroupDescribe
(describe.py), the group and member state (consumer_group.py), reconciliation (reconcile.py), the target
assignment (target.py, through shim.coordinator.assignors), fencing and timers (fencing.py),
records and replay (persist.py, consumer_replay.py), offsets rules (offsets_check.py), the admin
APIs' consumer step (consumer_admin.py) and members of the classic protocol (classic_members.py,
upgrade.py, downgrade.py). shim/coordinator/dispatch.py sends each request here when it names a consumer group."""
