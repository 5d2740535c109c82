"""The API keys the coordinator answers, by the names kcodec's schemas give them (kcodec.api.API_KEYS)."""

from __future__ import annotations

from kcodec.api import API_KEYS

_KEY = {name: key for key, name in API_KEYS.items()}

OFFSET_COMMIT = _KEY["OffsetCommit"]
OFFSET_FETCH = _KEY["OffsetFetch"]
JOIN_GROUP = _KEY["JoinGroup"]
HEARTBEAT = _KEY["Heartbeat"]
LEAVE_GROUP = _KEY["LeaveGroup"]
SYNC_GROUP = _KEY["SyncGroup"]
DESCRIBE_GROUPS = _KEY["DescribeGroups"]
LIST_GROUPS = _KEY["ListGroups"]
TXN_OFFSET_COMMIT = _KEY["TxnOffsetCommit"]
DELETE_GROUPS = _KEY["DeleteGroups"]
OFFSET_DELETE = _KEY["OffsetDelete"]
CONSUMER_GROUP_HEARTBEAT = _KEY["ConsumerGroupHeartbeat"]
CONSUMER_GROUP_DESCRIBE = _KEY["ConsumerGroupDescribe"]
