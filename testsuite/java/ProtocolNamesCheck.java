import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Kafka's protocol vocabulary for testsuite/codec/test_java_protocol_names.py: reads one JSON
 * object per line on stdin, answers one per line on stdout ({"error": "..."} on failure).
 *
 *   {"op":"protocol_names"} -> {"api_keys": [[name, id], ...],
 *                               "errors": [[name, code, retriable, message, exception class], ...]}
 *       (the ApiKeys and Errors enums; retriable = instanceof RetriableException;
 *        message and class null for NONE)
 *   {"op":"ping"}           -> {"ok": true}
 */
public class ProtocolNamesCheck {
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
                answer.put("error", t.getClass().getSimpleName() + ": " + t.getMessage());
            }
            out.println(MAPPER.writeValueAsString(answer));
            out.flush();
        }
    }

    private static ObjectNode handle(JsonNode req) {
        String op = req.path("op").asText();
        ObjectNode answer = MAPPER.createObjectNode();
        switch (op) {
            case "ping":
                answer.put("ok", true);
                return answer;
            case "protocol_names": {
                ArrayNode keys = answer.putArray("api_keys");
                for (ApiKeys k : ApiKeys.values())
                    keys.addArray().add(k.name()).add(k.id);
                ArrayNode errors = answer.putArray("errors");
                for (Errors e : Errors.values()) {
                    ApiException ex = e.exception();
                    errors.addArray().add(e.name()).add(e.code())
                        .add(ex instanceof RetriableException)
                        .add(ex == null ? null : ex.getMessage())
                        .add(ex == null ? null : ex.getClass().getName());
                }
                return answer;
            }
            default:
                throw new IllegalArgumentException("unknown op '" + op + "'");
        }
    }
}
