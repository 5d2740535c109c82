// A KIP-932 share-group member (KafkaShareConsumer, Kafka 4.3.1) in explicit acknowledgement mode
// (share.acknowledgement.mode=explicit, KIP-932 "Explicit acknowledgement"): it RELEASEs each chosen
// record the first time it is delivered (AcknowledgeType.RELEASE makes it available again, so the
// share-partition leader redelivers it with a higher delivery count) and ACCEPTs every other delivery.
// Before subscribing it sets the group config share.auto.offset.reset=earliest (GroupConfig, set with
// Admin.incrementalAlterConfigs on a GROUP resource) so records produced before the member joined count.
// Prints one JSON object per line on stdout:
//   {"name":"started"}
//   {"name":"record","partition":0,"offset":3,"value":"v3","deliveryCount":1,"ack":"RELEASE"}
//   {"name":"summary","delivered":53,"accepted":50,"released":3,"redelivered":[{"partition":0,"offset":3,"deliveryCount":2}]}
// Usage: ShareConsumerApp BOOTSTRAP GROUP TOPIC N RELEASE TIMEOUT_MS [hold]
//   N: distinct records to accept before stopping; RELEASE: "p:o,p:o" (or "-" for none).
//   hold: after the summary, stay a member (polling) until SIGTERM, then close.
// Exits 0 after commitSync() and close(), 3 when N records were not accepted within TIMEOUT_MS.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareConsumerApp {
    static String quote(String s) {
        return JsonText.quote(s);
    }

    static void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], topic = args[2];
        int n = Integer.parseInt(args[3]);
        Set<String> toRelease = new HashSet<>();
        if (!args[4].equals("-")) Collections.addAll(toRelease, args[4].split(","));
        long deadline = System.currentTimeMillis() + Long.parseLong(args[5]);
        boolean hold = args.length > 6 && args[6].equals("hold");
        CountDownLatch stop = new CountDownLatch(1), closed = new CountDownLatch(1);
        if (hold) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                stop.countDown();
                try { closed.await(); } catch (InterruptedException ignored) { }
            }));
        }

        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(a)) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp op = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                                                 AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(res, List.of(op))).all().get();
        }

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Set<String> released = new HashSet<>(), accepted = new HashSet<>();
        List<String> redelivered = new ArrayList<>();
        int delivered = 0;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            emit("{\"name\":\"started\"}");
            while (accepted.size() < n && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : records) {
                    delivered++;
                    String key = r.partition() + ":" + r.offset();
                    int count = r.deliveryCount().map(Short::intValue).orElse(-1);
                    AcknowledgeType ack;
                    if (toRelease.contains(key) && !released.contains(key)) {
                        ack = AcknowledgeType.RELEASE;
                        released.add(key);
                    } else {
                        ack = AcknowledgeType.ACCEPT;
                        accepted.add(key);
                    }
                    if (count > 1) {
                        redelivered.add("{\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
                                        + ",\"deliveryCount\":" + count + "}");
                    }
                    consumer.acknowledge(r, ack);
                    emit("{\"name\":\"record\",\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
                         + ",\"value\":" + quote(r.value()) + ",\"deliveryCount\":" + count
                         + ",\"ack\":\"" + ack.name() + "\"}");
                }
                if (!records.isEmpty()) consumer.commitSync();
            }
            emit("{\"name\":\"summary\",\"delivered\":" + delivered + ",\"accepted\":" + accepted.size()
                 + ",\"released\":" + released.size() + ",\"redelivered\":[" + String.join(",", redelivered) + "]}");
            while (hold && stop.getCount() > 0) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    consumer.acknowledge(r, AcknowledgeType.RELEASE);   // not ours to take while holding
                }
            }
        }
        emit("{\"name\":\"closed\"}");
        closed.countDown();
        if (!hold) System.exit(accepted.size() >= n ? 0 : 3);
    }
}
