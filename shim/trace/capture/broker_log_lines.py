"""The group coordinator's log statements that broker_log.py turns into events: one regular
expression per statement, matched against the message after its log-context prefixes.

Sources (Apache Kafka): org.apache.kafka.coordinator.group.GroupMetadataManager (the new group
coordinator: every Kafka 4.x broker, and Kafka 3.9 when `group.coordinator.rebalance.protocols`
includes `consumer` or `group.coordinator.new.enable=true`), GroupCoordinatorShard,
modern.consumer.TopicRegexResolver; the Scala coordinator of Kafka 3.9's default setup:
kafka.coordinator.group.GroupCoordinator and kafka.coordinator.group.GroupMetadataManager.
The wording of the same statement differs a little between the two implementations and between
releases ("added" / "add", "in state S" / "in S state", a trailing "(__consumer_offsets-N)"):
one expression covers every variant.

Each entry is (kind, expression). Named groups become body fields: `group`, `member`, `instance`,
`generation`, `members`, `epoch`, ... (see `INT_FIELDS`); kinds starting with "~" are handled in
broker_log.py (several events from one line, or a line that only explains the next `group_epoch`).
"""

from __future__ import annotations

import re

# A log line of Kafka's layouts: log4j 1 `[%d] %p %m (%c)%n` (3.x config/log4j.properties), log4j2
# the same pattern (4.x config/log4j2.yaml; %d is "yyyy-MM-dd HH:mm:ss,SSS", no zone), and an
# ISO-8601 stamp ("2026-11-28T10:15:03.123Z", "+01:00", or none), with or without the brackets.
HEADER = re.compile(
    r"\[?(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})(?:[,.](?P<frac>\d{1,9}))?"
    r"(?P<zone>Z|[+-]\d{2}(?::?\d{2})?)?\]?\s+(?P<level>TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s+(?P<msg>.*)")
# the `(%c)` at the end of the line: the logger (a dotted class name)
LOGGER = re.compile(r"(?P<msg>.*) \((?P<logger>[A-Za-z_$][\w$]*(?:\.[\w$]+)+)\)\s*$")
# "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] " (LogContext, 4.x and the 3.9 new
# coordinator), "[GroupCoordinator 1]: " / "[GroupMetadataManager brokerId=1] " (Scala logIdent)
CONTEXT = re.compile(r"\[(?P<ctx>[A-Z][\w ]*?)(?: id=| brokerId=| )(?P<node>\d+)(?P<rest>[^\]]*)\]:? ")
PARTITION = re.compile(r"partition=(\d+)")
SCALA_PARTITION = re.compile(r"\(__consumer_offsets-(\d+)\)")    # in the Scala coordinator's message
# "[GroupId g] ", "[GroupId g][MemberId m] ", "[Group g] ", "[GroupId=g] "
GROUP_PREFIX = re.compile(r"\[(?:GroupId|Group)[ =](?P<group>[^\]]+)\](?:\[MemberId [^\]]+\])? ?")

INT_FIELDS = ("generation", "members", "epoch", "static_members", "time_ms", "offsets_removed")

_P = r"(?: \(__consumer_offsets-\d+\))?"          # the Scala coordinator's "(__consumer_offsets-N)"
_TYPE = r"(?:consumer|share|streams)"

LINES: list[tuple[str, re.Pattern]] = [(kind, re.compile(rx)) for kind, rx in [
    # ---- classic groups (both coordinators)
    ("rebalance", r"Preparing to rebalance group (?P<group>.+?) in state \w+ with old generation "
                  r"(?P<generation>-?\d+)" + _P + r" \(reason: (?P<reason>.*)\)\.?$"),
    ("generation", r"Stabilized group (?P<group>.+?) generation (?P<generation>\d+)" + _P
                   + r" with (?P<members>\d+) members\.?$"),
    ("~empty", r"Group (?P<group>.+?) with generation (?P<generation>\d+) is now empty" + _P + r"\.?$"),
    ("assignment", r"Assignment received from leader (?P<leader>\S+) for group (?P<group>.+?) for generation "
                   r"(?P<generation>\d+)\. The group has (?P<members>\d+) members, (?P<static_members>\d+) of "
                   r"which are static\.$"),
    ("member_id_required", r"Dynamic [Mm]ember with unknown member id joins (?:group (?P<group>.+?) in (?:state )?"
                           r"\w+(?: state)?|the consumer group)\. Created a new member id (?P<member>\S+) and "
                           r"request(?:ing)? the member to rejoin with this id\.$"),
    ("~joined", r"Dynamic [Mm]ember with unknown member id joins group (?P<group>.+?) in (?:state )?\w+(?: state)?\. "
                r"Created a new member id (?P<member>\S+) (?:for this member and add to the group|and added the "
                r"member to the group)\.$"),
    ("~joined", r"Pending dynamic member with id (?P<member>\S+) joins group (?P<group>.+?) in \w+ state\. "
                r"Adding to the group now\.$"),
    ("~joined", r"Static member with groupInstanceId=(?P<instance>.+?) and unknown member id joins group "
                r"(?P<group>.+?) in \w+ state\. Created a new member id (?P<member>\S+) for this member and "
                r"add(?:ed)? to the group\.$"),
    ("static_member_replaced", r"Static member with groupInstanceId=(?P<instance>.+?) and unknown member id joins "
                               r"group (?P<group>.+?) in \w+ state\. Replacing previously mapped member "
                               r"(?P<old_member>\S+) with this groupInstanceId\.$"),
    ("~session_timeout", r"Member (?P<member>\S+) in group (?P<group>.+?) has failed, removing it from the group\.?$"),
    ("pending_member_expired", r"Pending member (?P<member>\S+) in group (?P<group>.+?) has been removed after "
                               r"session timeout expiration\.$"),
    ("member_left", r"Member (?P<member>\S+) has left group through explicit `LeaveGroup` request; "
                    r"client reason: (?P<reason>.*)$"),
    ("member_left", r"Member MemberMetadata\(memberId=(?P<member>[^,]+), groupInstanceId=(?:Some\((?P<instance>"
                    r"[^)]*)\)|None), .*\) has left group (?P<group>.+?) through explicit `LeaveGroup`; "
                    r"client reason: (?P<reason>.*)$"),
    ("~pending_left", r"Pending member (?P<member>\S+) has left group through explicit `LeaveGroup` request; "
                      r"client reason: (?P<reason>.*)$"),
    ("~pending_left", r"Pending member with memberId=(?P<member>\S+) has left group (?P<group>.+?) through "
                      r"explicit `LeaveGroup` request$"),
    # classic members of a consumer group (KIP-848 migration)
    ("member_left", r"(?:Dynamic|Static) [Mm]ember (?P<member>\S+)(?: with instance id (?P<instance>.+?))? has left "
                    r"group through explicit `LeaveGroup` request; client reason: (?P<reason>.*)$"),
    ("~removed", r"Group (?P<group>.+?) (?P<reason>removed dynamic members who haven't joined): (?P<list>.*)$"),
    ("~removed", r"Group (?P<group>.+?) (?P<reason>removed members who haven't sent their sync requests?): "
                 r"(?P<list>.*)$"),
    ("~deleted", r"The following groups were deleted: (?P<list>.*)\. A total of (?P<offsets_removed>\d+) offsets "
                 r"were removed\.$"),
    ("group_deleted", r"Group (?P<group>.+?) transitioned to Dead in generation (?P<generation>\d+)$"),
    ("group_converted", r"Converted the (?:empty )?(?P<frm>classic|consumer|streams) group to a "
                        r"(?P<to>classic|consumer|streams) group\.$"),
    # ---- KIP-848 consumer groups (new coordinator; "[GroupId g] " prefix)
    ("~joined", r"Member (?P<member>\S+) joins the " + _TYPE + r" group using the (?P<protocol>\w+) protocol\.$"),
    ("~joined", r"Static member (?P<member>\S+) with instance id (?P<instance>.+?) joins the " + _TYPE
                + r" group using the (?P<protocol>\w+) protocol\.$"),
    ("~replaced", r"Static member with instance id (?P<instance>.+?) re-joins the " + _TYPE + r" group using the "
                  r"(?P<protocol>\w+) protocol\. Created a new member (?P<new>\S+) to replace the existing member "
                  r"(?P<old>\S+)\.$"),
    # before the "left" expression below (the instance id pattern would swallow "temporarily")
    ("member_left_temporarily", r"Static [Mm]ember (?P<member>\S+) with instance id (?P<instance>.+?) temporarily "
                                r"left the " + _TYPE + r" group\.$"),
    ("~fenced", r"(?P<how>Member) (?P<member>\S+) (?P<reason>left the " + _TYPE + r" group)\.$"),
    ("~fenced", r"(?P<how>Static [Mm]ember) (?P<member>\S+) with instance id (?P<instance>.+?) (?P<reason>left the "
                + _TYPE + r" group)\.$"),
    ("~fenced", r"(?P<how>(?:Streams )?[Mm]ember) (?P<member>\S+) fenced from the group because (?P<reason>.*?)\.?$"),
    ("group_epoch", r"Bumped (?:streams )?group epoch to (?P<epoch>\d+)(?: with metadata hash -?\d+)?.*?\.$"),
    ("target_assignment", r"Computed a new target assignment for epoch (?P<epoch>\d+) with '(?P<assignor>[^']*)' "
                          r"assignor in (?P<time_ms>\d+)ms(?:: .*)?\.$"),
    # lines that only explain the next group epoch bump of the group
    ("~why_subscription", r"Member (?P<member>\S+) updated its subscribed (?:topics|regex) to: .*$"),
    ("~why_regex", r"Scanned \d+ topics to refresh regular expressions (?P<list>.*) in \d+ms\.$"),
    ("~why_regex", r"Received updated regular expressions based on the context of member \S+: (?P<list>.*)\.$"),
    ("~why_metadata", r"Computed new (?:metadata hash|subscription metadata): .*$"),
]]

# a quick test before the expressions: every statement above names one of these
KEYWORDS = ("roup", "ember", "epoch", "Scanned")
