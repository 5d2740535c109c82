"""Error codes of the KIP-848 APIs not in ../errors.py, as kcodec.protocol.Error's members of the same
name (Kafka's org.apache.kafka.common.protocol.Errors), and ConsumerGroupDescribe's member types."""

from kcodec.protocol import Error

INVALID_REQUEST = Error.INVALID_REQUEST
TOPIC_AUTHORIZATION_FAILED = Error.TOPIC_AUTHORIZATION_FAILED
FENCED_MEMBER_EPOCH = Error.FENCED_MEMBER_EPOCH
UNRELEASED_INSTANCE_ID = Error.UNRELEASED_INSTANCE_ID
UNSUPPORTED_ASSIGNOR = Error.UNSUPPORTED_ASSIGNOR
INVALID_REGULAR_EXPRESSION = Error.INVALID_REGULAR_EXPRESSION

# ConsumerGroupDescribe v1 member types (not error codes)
MEMBER_TYPE_CLASSIC, MEMBER_TYPE_CONSUMER = 0, 1
