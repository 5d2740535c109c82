// A KafkaConsumer that prints what its ConsumerRebalanceListener sees, as one JSON object per line on
// stdout, each with "timestamp" (System.currentTimeMillis() when the line was made):
//   {"name":"started","timestamp":...}
//   {"name":"partitions_assigned","timestamp":...,"member":"<member id>","generation":3,
//    "partitions":[{"topic":"t","partition":0},...]}   (member, generation: consumer.groupMetadata())
//   {"name":"partitions_revoked",...}   {"name":"partitions_lost",...}
//   {"name":"record","timestamp":...,"topic":"t","partition":0,"offset":3,"value":"v"}
//   {"name":"stall_start","timestamp":...,"ms":9000}   {"name":"stall_end","timestamp":...}
//   {"name":"shutdown_complete","timestamp":...}
// Usage: RebalanceConsumer BOOTSTRAP GROUP SUBSCRIPTION [--stall-file PATH] [key=value ...]
//   SUBSCRIPTION: "pattern:REGEX" (KafkaConsumer.subscribe(SubscriptionPattern), the KIP-848 broker-side
//   regex) or "topics:T1,T2"; key=value: any consumer config (group.protocol, group.instance.id,
//   partition.assignment.strategy, session.timeout.ms, max.poll.interval.ms, client.id, ...).
//   --stall-file PATH: when PATH exists, the poll loop blocks for the milliseconds written in it (the
//   file is deleted first): a stalled application, so a classic member's heartbeat thread sends a
//   LeaveGroup when max.poll.interval.ms passes (AbstractCoordinator.handlePollTimeoutExpiry).
// Stops cleanly (consumer.close()) on SIGTERM.
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Arrays;
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

public class RebalanceConsumer {
    static String quote(String s) {
        return JsonText.quote(s);
    }

    static synchronized void emit(String name, String fields) {
        System.out.println("{\"name\":\"" + name + "\",\"timestamp\":" + System.currentTimeMillis() + fields + "}");
        System.out.flush();
    }

    static String partitions(Collection<TopicPartition> parts) {
        StringBuilder b = new StringBuilder(",\"partitions\":[");
        int n = 0;
        for (TopicPartition tp : parts) {
            if (n++ > 0) b.append(',');
            b.append("{\"topic\":").append(quote(tp.topic())).append(",\"partition\":").append(tp.partition()).append('}');
        }
        return b.append(']').toString();
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "2000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Path stallFile = null;
        for (int i = 3; i < args.length; i++) {
            if (args[i].equals("--stall-file")) stallFile = Paths.get(args[++i]);
            else p.put(args[i].substring(0, args[i].indexOf('=')), args[i].substring(args[i].indexOf('=') + 1));
        }
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try { done.await(); } catch (InterruptedException ignored) { }
        }));
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            void log(String name, Collection<TopicPartition> parts) {
                emit(name, ",\"member\":" + quote(consumer.groupMetadata().memberId()) + ",\"generation\":"
                     + consumer.groupMetadata().generationId() + partitions(parts));
            }
            public void onPartitionsAssigned(Collection<TopicPartition> parts) { log("partitions_assigned", parts); }
            public void onPartitionsRevoked(Collection<TopicPartition> parts) { log("partitions_revoked", parts); }
            public void onPartitionsLost(Collection<TopicPartition> parts) { log("partitions_lost", parts); }
        };
        String subscription = args[2];
        if (subscription.startsWith("pattern:"))
            consumer.subscribe(new SubscriptionPattern(subscription.substring(8)), listener);
        else
            consumer.subscribe(Arrays.asList(subscription.substring(subscription.indexOf(':') + 1).split(",")), listener);
        emit("started", "");
        try {
            while (true) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    emit("record", ",\"topic\":" + quote(r.topic()) + ",\"partition\":" + r.partition()
                         + ",\"offset\":" + r.offset() + ",\"value\":" + quote(String.valueOf(r.value())));
                }
                if (stallFile != null && Files.exists(stallFile)) {
                    long ms = Long.parseLong(new String(Files.readAllBytes(stallFile)).trim());
                    Files.delete(stallFile);
                    emit("stall_start", ",\"ms\":" + ms);
                    Thread.sleep(ms);
                    emit("stall_end", "");
                }
            }
        } catch (WakeupException e) {
            // shutting down
        } finally {
            consumer.close();
            emit("shutdown_complete", "");
            done.countDown();
        }
    }
}
