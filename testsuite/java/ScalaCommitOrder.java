import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;

import java.util.Random;

/**
 * Prints seeded commit requests and the order Kafka 3.9's GroupCoordinatorAdapter.commitOffsets would
 * answer them in: the partitions put into a Scala mutable.HashMap, then `toMap`, then iterated (the
 * real scala-library and kafka-clients classes of the Kafka release on the classpath). One line per
 * case: "topic:partition,... topic:partition,..." (request, then answer order).
 * With a third argument "members": seeded member ids put into a Scala mutable.HashMap[String, _] (as
 * GroupMetadata.members), some removed, and the map's iteration order ("id,... id,...").
 * Usage: java -cp 'kafka-3.9.x/libs/*' ScalaCommitOrder.java SEED CASES [members]
 */
public class ScalaCommitOrder {
    public static void main(String[] args) {
        Random random = new Random(Long.parseLong(args[0]));
        int cases = Integer.parseInt(args[1]);
        if (args.length > 2) {
            members(random, cases);
            return;
        }
        for (int c = 0; c < cases; c++) {
            scala.collection.mutable.HashMap<TopicIdPartition, Integer> partitions = new scala.collection.mutable.HashMap<>();
            StringBuilder request = new StringBuilder();
            int n = 1 + random.nextInt(c % 3 == 0 ? 6 : 60);
            for (int i = 0; i < n; i++) {
                String topic = "t" + random.nextInt(6) + (random.nextBoolean() ? "-\u00e9" : "") + (random.nextInt(9) == 0 ? "\ud83d\ude00" : "");
                int partition = random.nextInt(random.nextBoolean() ? 8 : 100000) - (random.nextInt(20) == 0 ? 5 : 0);
                partitions.put(new TopicIdPartition(Uuid.ZERO_UUID, partition, topic), i);
                request.append(topic).append(':').append(partition).append(',');
            }
            scala.collection.immutable.Map<TopicIdPartition, Integer> answer =
                partitions.toMap(scala.$less$colon$less$.MODULE$.refl());
            StringBuilder order = new StringBuilder();
            scala.collection.Iterator<scala.Tuple2<TopicIdPartition, Integer>> it = answer.iterator();
            while (it.hasNext()) {
                TopicIdPartition tp = it.next()._1();
                order.append(tp.topic()).append(':').append(tp.partition()).append(',');
            }
            System.out.println(request + " " + order);
        }
    }

    static void members(Random random, int cases) {
        for (int c = 0; c < cases; c++) {
            scala.collection.mutable.HashMap<String, Integer> members = new scala.collection.mutable.HashMap<>();
            StringBuilder added = new StringBuilder();
            int n = 1 + random.nextInt(c % 2 == 0 ? 6 : 30);
            for (int i = 0; i < n; i++) {
                String id = "c" + random.nextInt(3) + "-" + Integer.toHexString(random.nextInt());
                members.put(id, i);
                added.append(id).append(',');
                if (random.nextInt(5) == 0) {           // a member leaves: "-" marks it
                    members.remove(id);
                    added.append('-').append(',');
                }
            }
            StringBuilder order = new StringBuilder();
            scala.collection.Iterator<String> it = members.keysIterator();
            while (it.hasNext()) order.append(it.next()).append(',');
            System.out.println(added + " " + order);
        }
    }
}
