// A transactional producer (the Java client) that sends offsets for a group and is then left with its
// transaction open, to be killed (SIGKILL) by the test: initTransactions, beginTransaction,
// sendOffsetsToTransaction(TOPIC-0 -> OFFSET, GROUP), then it prints {"name":"sent"} and waits.
// Usage: TxnAbandon BOOTSTRAP TRANSACTIONAL_ID GROUP TOPIC OFFSET TRANSACTION_TIMEOUT_MS
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnAbandon {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[1]);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, args[5]);
        KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        producer.initTransactions();
        producer.beginTransaction();
        producer.sendOffsetsToTransaction(
            Map.of(new TopicPartition(args[3], 0), new OffsetAndMetadata(Long.parseLong(args[4]))),
            new ConsumerGroupMetadata(args[2]));
        System.out.println("{\"name\":\"sent\"}");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
