import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;

/**
 * Prints the protocol vocabulary of the kafka-clients jar on its class path as one JSON object,
 * for scripts/pin-schemas (which writes it to codecs/schemas/protocol-vocabulary.json):
 *
 *   {"api_keys": [[id, "NAME"], ...],
 *    "errors": [[code, "NAME", retriable, "default message", "exception class"], ...]}
 *
 * Read from Kafka's own enums: ApiKeys (every constant, also those whose schemas have no valid
 * version any more) and Errors (retriable = its exception is a RetriableException, possibly
 * indirectly; message = Errors.exception().getMessage(), Kafka's default message; message and
 * class null for NONE). Needs only a JDK 11+ and the jar: java -cp kafka-clients.jar ProtocolVocabulary.java
 */
public class ProtocolVocabulary {
    public static void main(String[] args) {
        StringBuilder b = new StringBuilder("{\"api_keys\": [");
        String sep = "\n  ";
        for (ApiKeys k : ApiKeys.values()) {
            b.append(sep).append('[').append(k.id).append(", ").append(quote(k.name())).append(']');
            sep = ",\n  ";
        }
        b.append("\n],\n\"errors\": [");
        sep = "\n  ";
        for (Errors e : Errors.values()) {
            ApiException ex = e.exception();
            b.append(sep).append('[').append(e.code()).append(", ").append(quote(e.name())).append(", ")
                .append(ex instanceof RetriableException).append(", ")
                .append(quote(ex == null ? null : ex.getMessage())).append(", ")
                .append(quote(ex == null ? null : ex.getClass().getName())).append(']');
            sep = ",\n  ";
        }
        System.out.println(b.append("\n]}"));
    }

    private static String quote(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
