import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import com.google.re2j.Pattern;
import com.google.re2j.PatternSyntaxException;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

/**
 * Long-lived helper that runs Kafka 4.3.1's own server-side assignors (and the re2j the broker
 * uses for SubscribedTopicRegex) for the Python test suite. One JSON object per line on stdin,
 * one JSON answer per line on stdout ({"error": "..."} on failure).
 *
 *   {"op":"assign", "assignor":"uniform|range", "homogeneous":true,
 *    "topics":[{"id":"<uuid>", "partitions":n}],
 *    "members":[{"id":"m", "instance":null|"i", "rack":null|"r", "topics":["<uuid>",...],
 *                "assignment":[["<uuid>", [p, ...]], ...]}]}
 *        -> {"assignment": {"m": {"<uuid>": [p, ...] (ascending)}}}
 *   Members, subscribed topics, assignment topics and partitions are handed to Kafka in the order given
 *   (insertion-ordered maps and sets); the inverted assignment is built from the members' assignments.
 *
 *   {"op":"regex", "pattern":"...", "topics":["name", ...]}
 *        -> {"ok":true, "matches":["name", ...]} | {"ok":false, "description":"..."}
 *   {"op":"ping"} -> {"ok": true}
 */
public class AssignorCheck {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode answer;
            try {
                answer = handle(MAPPER.readTree(line));
            } catch (Throwable t) {
                answer = MAPPER.createObjectNode();
                answer.put("error", t.getClass().getName() + ": " + t.getMessage());
            }
            out.println(MAPPER.writeValueAsString(answer));
            out.flush();
        }
    }

    private static ObjectNode handle(JsonNode req) {
        String op = req.path("op").asText();
        switch (op) {
            case "ping": {
                ObjectNode o = MAPPER.createObjectNode();
                o.put("ok", true);
                return o;
            }
            case "assign":
                return assign(req);
            case "regex":
                return regex(req);
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static Uuid uuid(String s) {
        UUID u = UUID.fromString(s);
        return new Uuid(u.getMostSignificantBits(), u.getLeastSignificantBits());
    }

    private static String text(Uuid u) {
        return new UUID(u.getMostSignificantBits(), u.getLeastSignificantBits()).toString();
    }

    private static ObjectNode assign(JsonNode req) {
        Map<Uuid, Integer> partitionCounts = new HashMap<>();
        for (JsonNode t : req.get("topics")) {
            partitionCounts.put(uuid(t.get("id").asText()), t.get("partitions").asInt());
        }
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                return partitionCounts.getOrDefault(topicId, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };

        Map<String, MemberSubscriptionAndAssignmentImpl> members = new LinkedHashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (JsonNode m : req.get("members")) {
            String memberId = m.get("id").asText();
            Set<Uuid> topics = new LinkedHashSet<>();
            for (JsonNode t : m.get("topics")) topics.add(uuid(t.asText()));
            Map<Uuid, Set<Integer>> assignment = new LinkedHashMap<>();
            for (JsonNode entry : m.get("assignment")) {
                Uuid topicId = uuid(entry.get(0).asText());
                Set<Integer> parts = new LinkedHashSet<>();
                for (JsonNode p : entry.get(1)) {
                    parts.add(p.asInt());
                    inverted.computeIfAbsent(topicId, k -> new HashMap<>()).put(p.asInt(), memberId);
                }
                assignment.put(topicId, parts);
            }
            members.put(memberId, new MemberSubscriptionAndAssignmentImpl(
                optional(m.get("rack")), optional(m.get("instance")), topics, new Assignment(assignment)));
        }

        ConsumerGroupPartitionAssignor assignor = switch (req.get("assignor").asText()) {
            case "uniform" -> new UniformAssignor();
            case "range" -> new RangeAssignor();
            default -> throw new IllegalArgumentException("unknown assignor");
        };
        SubscriptionType type = req.get("homogeneous").asBoolean()
            ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        GroupAssignment result = assignor.assign(
            new GroupSpecImpl(Collections.unmodifiableMap(members), type, inverted), describer);

        ObjectNode byMember = MAPPER.createObjectNode();
        for (Map.Entry<String, MemberAssignment> e : result.members().entrySet()) {
            ObjectNode topics = byMember.putObject(e.getKey());
            for (Map.Entry<Uuid, Set<Integer>> tp : e.getValue().partitions().entrySet()) {
                if (tp.getValue().isEmpty()) continue;
                ArrayNode parts = topics.putArray(text(tp.getKey()));
                for (int p : new TreeSet<>(tp.getValue())) parts.add(p);
            }
        }
        ObjectNode o = MAPPER.createObjectNode();
        o.set("assignment", byMember);
        return o;
    }

    private static Optional<String> optional(JsonNode n) {
        return n == null || n.isNull() ? Optional.empty() : Optional.of(n.asText());
    }

    private static ObjectNode regex(JsonNode req) {
        ObjectNode o = MAPPER.createObjectNode();
        Pattern pattern;
        try {
            pattern = Pattern.compile(req.get("pattern").asText());
        } catch (PatternSyntaxException ex) {
            o.put("ok", false);
            o.put("description", ex.getDescription());
            return o;
        }
        o.put("ok", true);
        ArrayNode matches = o.putArray("matches");
        for (JsonNode t : req.path("topics")) {
            if (pattern.matcher(t.asText()).matches()) matches.add(t.asText());
        }
        return o;
    }
}
