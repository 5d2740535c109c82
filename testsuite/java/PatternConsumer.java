// A consumer-protocol (KIP-848) member subscribed with a broker-side regular expression
// (KafkaConsumer.subscribe(SubscriptionPattern)); prints one JSON object per line on stdout:
//   {"name":"started"}
//   {"name":"partitions_assigned","partitions":[{"topic":"t","partition":0},...]}
//   {"name":"partitions_revoked","partitions":[...]}
//   {"name":"record","topic":"t","partition":0,"offset":3,"value":"v"}
// Usage: PatternConsumer BOOTSTRAP GROUP REGEX. Stops cleanly (consumer.close()) on SIGTERM.
import java.time.Duration;
import java.util.Collection;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class PatternConsumer {
    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String partitions(Collection<TopicPartition> parts) {
        StringBuilder b = new StringBuilder("[");
        for (TopicPartition tp : parts) {
            if (b.length() > 1) b.append(',');
            b.append("{\"topic\":").append(quote(tp.topic())).append(",\"partition\":").append(tp.partition()).append('}');
        }
        return b.append(']').toString();
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "2000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try { done.await(); } catch (InterruptedException ignored) { }
        }));
        consumer.subscribe(new SubscriptionPattern(args[2]), new ConsumerRebalanceListener() {
            public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                emit("{\"name\":\"partitions_assigned\",\"partitions\":" + partitions(parts) + "}");
            }
            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                emit("{\"name\":\"partitions_revoked\",\"partitions\":" + partitions(parts) + "}");
            }
        });
        emit("{\"name\":\"started\"}");
        try {
            while (true) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    emit("{\"name\":\"record\",\"topic\":" + quote(r.topic()) + ",\"partition\":" + r.partition()
                         + ",\"offset\":" + r.offset() + ",\"value\":" + quote(String.valueOf(r.value())) + "}");
                }
            }
        } catch (WakeupException e) {
            // shutting down
        } finally {
            consumer.close();
            emit("{\"name\":\"shutdown_complete\"}");
            done.countDown();
        }
    }
}
