package dev.kshim.testcontainers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.Network;
import org.testcontainers.kafka.KafkaContainer;

/**
 * The example to copy: a consumer with group.instance.id bounces (closed and restarted within its
 * session timeout) through kshim in front of a Testcontainers KafkaContainer. The group keeps its
 * generation, the member gets the same partitions back, and its committed offsets are kept.
 */
class StaticMemberBounceTest {
    static final String KSHIM_IMAGE = System.getProperty("kshim.image", "kshim:local");
    static final String KAFKA_IMAGE = System.getProperty("kafka.image", "apache/kafka:4.4.0");
    static final String TOPIC = "orders";
    static final String GROUP = "billing";

    @Test
    void staticMemberBouncesWithoutRebalance() throws Exception {
        try (Network network = Network.newNetwork();
             KafkaContainer kafka = new KafkaContainer(KAFKA_IMAGE).withNetwork(network).withListener("kafka:19092");
             KshimContainer kshim = new KshimContainer(KSHIM_IMAGE).withNetwork(network).withUpstream("kafka:19092")
                 .dependsOn(kafka)) {
            kshim.start();
            String bootstrap = kshim.getBootstrapServers();
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                admin.createTopics(List.of(new NewTopic(TOPIC, 2, (short) 1))).all().get();
            }
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap),
                    new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < 20; i++) {
                    producer.send(new ProducerRecord<>(TOPIC, i % 2, null, "order-" + i));
                }
            }

            Member first = Member.run(bootstrap, 20);
            Member second = Member.run(bootstrap, 0);         // the same instance id, restarted at once

            assertFalse(first.assignment.isEmpty());
            assertEquals(first.generation, second.generation, "no rebalance: the generation is the same");
            assertEquals(first.assignment, second.assignment, "the same partitions come back");
            assertEquals(first.committed, second.committed, "the committed offsets are kept");
            assertEquals(20L, first.committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum());
        }
    }

    /** One run of the static member: joins, consumes `expect` records, commits, closes (no LeaveGroup). */
    record Member(int generation, Set<TopicPartition> assignment, Map<TopicPartition, OffsetAndMetadata> committed) {
        static Member run(String bootstrap, int expect) {
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "billing-1");
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000");
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of(TOPIC));
                int seen = 0;
                long deadline = System.currentTimeMillis() + 60_000;
                while ((seen < expect || consumer.assignment().isEmpty()) && System.currentTimeMillis() < deadline) {
                    seen += consumer.poll(Duration.ofMillis(200)).count();
                }
                assertEquals(expect, seen);
                consumer.commitSync();
                Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>(consumer.committed(consumer.assignment()));
                return new Member(consumer.groupMetadata().generationId(), Set.copyOf(consumer.assignment()), committed);
            }
        }
    }
}
