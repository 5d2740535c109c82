// A Kafka Streams application in a KIP-1071 streams group (StreamsConfig group.protocol=streams,
// Kafka Streams 4.3.1): reads INPUT, upper-cases each value (keys kept) and writes OUTPUT,
// processing.guarantee=at_least_once. Stateless (KStream.mapValues) by default; with MODE "stateful"
// the values go through a key-value store first (groupByKey().reduce keeping the latest value: a
// RocksDB store with a changelog topic, one of the internal topics the streams group's coordinator
// creates, KIP-1071), then are upper-cased.
// Prints one JSON object per line on stdout:
//   {"name":"state","from":"REBALANCING","to":"RUNNING"}
//   {"name":"processed","count":100}          (every 100 records this instance processed)
//   {"name":"closed","processed":1234}
// Usage: StreamsApp BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [stateless|stateful]
// Stops cleanly (KafkaStreams.close) on SIGTERM.
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public class StreamsApp {
    static void emit(String json) {
        synchronized (System.out) {
            System.out.println(json);
            System.out.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        AtomicLong processed = new AtomicLong();
        StreamsBuilder builder = new StreamsBuilder();
        boolean stateful = args.length > 5 && args[5].equals("stateful");
        KStream<String, String> input = builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()));
        if (stateful) {
            input = input.groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                         .reduce((older, newer) -> newer, Materialized.as("latest"))
                         .toStream();
        }
        input.mapValues(v -> {
                   long n = processed.incrementAndGet();
                   if (n % 100 == 0) emit("{\"name\":\"processed\",\"count\":" + n + "}");
                   return v == null ? null : v.toUpperCase();
               })
               .to(args[3], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setStateListener((to, from) ->
            emit("{\"name\":\"state\",\"from\":\"" + from + "\",\"to\":\"" + to + "\"}"));
        CountDownLatch stop = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.countDown();
            try { closed.await(); } catch (InterruptedException ignored) { }
        }));
        streams.start();
        stop.await();
        streams.close(Duration.ofSeconds(30));
        emit("{\"name\":\"closed\",\"processed\":" + processed.get() + "}");
        closed.countDown();
    }
}
