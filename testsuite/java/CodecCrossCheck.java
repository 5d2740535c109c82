import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;

/**
 * Long-lived helper that lets the Python test suite compare kcodec with Kafka's own
 * generated message classes. Reads one JSON object per line on stdin and answers one
 * JSON object per line on stdout ({"error": "..."} on failure).
 *
 * Messages are named either by "name" (schema name, e.g. "MetadataRequest",
 * "RequestHeader", "ConsumerProtocolSubscription") or by "api_key" + "kind"
 * ("request" | "response").
 *
 *   {"op":"encode", "name":..., "version":v, "json":{...}}   -> {"bytes": b64}
 *   {"op":"decode", "name":..., "version":v, "bytes":b64}    -> {"json": {...}, "remaining": n}
 *   {"op":"records", "compression":"none|gzip|snappy|lz4|zstd", "magic":2, "base_offset":0,
 *    "timestamp_type":"CREATE_TIME", "producer_id":-1, "producer_epoch":-1,
 *    "base_sequence":-1, "partition_leader_epoch":-1, "transactional":false,
 *    "records":[{"timestamp":t, "key":b64|null, "value":b64|null,
 *                "headers":[{"key":"k","value":b64|null}]}]}            -> {"bytes": b64}
 *   {"op":"end_txn_marker", "commit":true, "base_offset":0, "timestamp":t,
 *    "partition_leader_epoch":0, "producer_id":1, "producer_epoch":0,
 *    "coordinator_epoch":5}                                              -> {"bytes": b64}
 *   {"op":"ping"}                                                        -> {"ok": true}
 */
public class CodecCrossCheck {
    private static final String PKG = "org.apache.kafka.common.message.";
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Map<String, Codec> CODECS = new HashMap<>();

    private static final class Codec {
        final Constructor<?> reader;
        final Method read;
        final Method write;

        Codec(Class<?> data, Class<?> converter) throws ReflectiveOperationException {
            reader = data.getConstructor(Readable.class, short.class);
            read = converter.getMethod("read", JsonNode.class, short.class);
            write = converter.getMethod("write", data, short.class);
        }
    }

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
                Throwable cause = t;
                while (cause instanceof InvocationTargetException && cause.getCause() != null)
                    cause = cause.getCause();
                answer = MAPPER.createObjectNode();
                answer.put("error", cause.getClass().getSimpleName() + ": " + cause.getMessage());
            }
            out.println(MAPPER.writeValueAsString(answer));
            out.flush();
        }
    }

    private static ObjectNode handle(JsonNode req) throws Exception {
        String op = req.path("op").asText();
        ObjectNode answer = MAPPER.createObjectNode();
        switch (op) {
            case "ping":
                answer.put("ok", true);
                return answer;
            case "encode": {
                Codec c = codec(req);
                short version = (short) req.get("version").asInt();
                Message msg = (Message) c.read.invoke(null, req.get("json"), version);
                ByteBuffer buf = MessageUtil.toByteBufferAccessor(msg, version).buffer();
                answer.put("bytes", b64(buf));
                return answer;
            }
            case "decode": {
                Codec c = codec(req);
                short version = (short) req.get("version").asInt();
                ByteBuffer buf = ByteBuffer.wrap(Base64.getDecoder().decode(req.get("bytes").asText()));
                Object msg = c.reader.newInstance(new ByteBufferAccessor(buf), version);
                answer.set("json", (JsonNode) c.write.invoke(null, msg, version));
                answer.put("remaining", buf.remaining());
                return answer;
            }
            case "records":
                answer.put("bytes", b64(records(req).buffer()));
                return answer;
            case "end_txn_marker": {
                ControlRecordType type = req.path("commit").asBoolean(true)
                    ? ControlRecordType.COMMIT : ControlRecordType.ABORT;
                MemoryRecords r = MemoryRecords.withEndTransactionMarker(
                    req.path("base_offset").asLong(0), req.path("timestamp").asLong(0),
                    req.path("partition_leader_epoch").asInt(0), req.path("producer_id").asLong(1),
                    (short) req.path("producer_epoch").asInt(0),
                    new EndTransactionMarker(type, req.path("coordinator_epoch").asInt(0)));
                answer.put("bytes", b64(r.buffer()));
                return answer;
            }
            default:
                throw new IllegalArgumentException("unknown op '" + op + "'");
        }
    }

    private static Codec codec(JsonNode req) throws ReflectiveOperationException {
        String name;
        if (req.hasNonNull("name")) {
            name = req.get("name").asText();
        } else {
            ApiMessageType type = ApiMessageType.fromApiKey((short) req.get("api_key").asInt());
            Message m = "response".equals(req.path("kind").asText("request"))
                ? type.newResponse() : type.newRequest();
            name = m.getClass().getSimpleName().replaceAll("Data$", "");
        }
        Codec c = CODECS.get(name);
        if (c == null) {
            Class<?> data;
            try {
                data = Class.forName(PKG + name + "Data");
            } catch (ClassNotFoundException e) {
                data = Class.forName(PKG + name);  // "data" schemas keep their plain name
            }
            c = new Codec(data, Class.forName(data.getName() + "JsonConverter"));
            CODECS.put(name, c);
        }
        return c;
    }

    private static MemoryRecords records(JsonNode req) {
        ArrayNode list = (ArrayNode) req.path("records");
        SimpleRecord[] recs = new SimpleRecord[list.size()];
        for (int i = 0; i < recs.length; i++) {
            JsonNode r = list.get(i);
            JsonNode hs = r.path("headers");
            Header[] headers = new Header[hs.size()];
            for (int j = 0; j < headers.length; j++)
                headers[j] = new RecordHeader(hs.get(j).get("key").asText(), bin(hs.get(j).get("value")));
            recs[i] = new SimpleRecord(r.path("timestamp").asLong(0), bin(r.get("key")), bin(r.get("value")), headers);
        }
        return MemoryRecords.withRecords(
            (byte) req.path("magic").asInt(2), req.path("base_offset").asLong(0),
            Compression.of(req.path("compression").asText("none")).build(),
            TimestampType.valueOf(req.path("timestamp_type").asText("CREATE_TIME")),
            req.path("producer_id").asLong(-1), (short) req.path("producer_epoch").asInt(-1),
            req.path("base_sequence").asInt(-1), req.path("partition_leader_epoch").asInt(-1),
            req.path("transactional").asBoolean(false), recs);
    }

    private static byte[] bin(JsonNode n) {
        return n == null || n.isNull() ? null : Base64.getDecoder().decode(n.asText());
    }

    private static String b64(ByteBuffer buf) {
        ByteBuffer b = buf.duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return Base64.getEncoder().encodeToString(bytes);
    }
}
