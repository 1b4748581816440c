package minibroker.check;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/** One member of a group, for tests that drive other clients beside it: a KafkaConsumer of the given group protocol
 *  ("classic" or "consumer") subscribed to one topic, committing what it read after every poll and before giving a
 *  partition up. It prints a JSON line per event on stdout: {"consumed": [values]}, {"owned": [partitions]},
 *  {"closed": true}; it leaves the group and exits when its stdin closes.
 *
 *  java minibroker.check.GroupMember BOOTSTRAP TOPIC GROUP PROTOCOL CLIENT_ID */
public final class GroupMember {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], protocol = args[3], clientId = args[4];
        Kafka kafka = new Kafka(bootstrap, false);
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                while (in.readLine() != null) {
                    // Nothing to read but the end.
                }
            } catch (Exception e) {
                // The end all the same.
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = kafka.consumer(ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol, ConsumerConfig.CLIENT_ID_CONFIG, clientId,
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    commit(consumer, processed);
                    report(consumer);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    report(consumer);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    report(consumer);
                }
            });
            while (!stop.get()) {
                List<String> values = new ArrayList<>();
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    values.add(r.value());
                    processed.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                if (!values.isEmpty()) {
                    commit(consumer, processed);
                    print("{\"consumed\": [" + values.stream().map(Main::json).collect(Collectors.joining(", "))
                            + "]}");
                }
            }
            commit(consumer, processed);
        }
        print("{\"closed\": true}");
    }

    static void commit(KafkaConsumer<String, String> consumer, Map<TopicPartition, OffsetAndMetadata> processed) {
        Map<TopicPartition, OffsetAndMetadata> mine = new HashMap<>();
        for (TopicPartition tp : consumer.assignment()) {
            if (processed.containsKey(tp)) {
                mine.put(tp, processed.get(tp));
            }
        }
        if (!mine.isEmpty()) {
            consumer.commitSync(mine);
        }
    }

    static void report(KafkaConsumer<String, String> consumer) {
        TreeSet<Integer> owned = consumer.assignment().stream().map(TopicPartition::partition)
                .collect(Collectors.toCollection(TreeSet::new));
        print("{\"owned\": " + owned + "}");
    }

    static synchronized void print(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private GroupMember() {}
}
