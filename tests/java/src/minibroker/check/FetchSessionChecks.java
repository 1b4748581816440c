package minibroker.check;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** A consumer over many partitions, which the Java client fetches in a fetch session (KIP-227): after the
 *  first full fetch it names only the partitions whose position moved, and the broker answers only the
 *  partitions with news. Every record is consumed once, the trickle's each as it is written. */
final class FetchSessionChecks {
    static final int PARTITIONS = 1000;
    static final int TRICKLE = 20;

    static void register(Map<String, Main.Check> checks) {
        checks.put("fetch_sessions.many_partitions", FetchSessionChecks::manyPartitions);
    }

    static void manyPartitions(Kafka kafka) throws Exception {
        String topic = kafka.name("sessions");
        kafka.createTopic(topic, PARTITIONS);
        List<TopicPartition> tps = Kafka.partitions(topic, PARTITIONS);
        Map<String, Integer> seen = new HashMap<>();
        try (KafkaProducer<String, String> producer = kafka.producer(ProducerConfig.LINGER_MS_CONFIG, 5);
             KafkaConsumer<String, String> consumer = kafka.consumer()) {
            for (int p = 0; p < PARTITIONS; p++) {
                producer.send(new ProducerRecord<>(topic, p, null, "first-" + p));
            }
            producer.flush();
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Expect.eventually("the first record of every partition", 120, () -> {
                poll(consumer, seen);
                return seen.size() >= PARTITIONS ? Boolean.TRUE : null;
            });
            for (int i = 0; i < TRICKLE; i++) {
                int partition = (i * 37 + 11) % PARTITIONS;
                String value = "trickle-" + i;
                producer.send(new ProducerRecord<>(topic, partition, null, value)).get(30, TimeUnit.SECONDS);
                Expect.eventually(value + " on partition " + partition, 30, () -> {
                    poll(consumer, seen);
                    return seen.containsKey(value) ? Boolean.TRUE : null;
                });
            }
        }
        Expect.equal("records consumed", PARTITIONS + TRICKLE, seen.size());
        Expect.isTrue(seen.values().stream().allMatch(n -> n == 1), () -> "a record consumed twice: " + seen);
    }

    static void poll(KafkaConsumer<String, String> consumer, Map<String, Integer> seen) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
            seen.merge(r.value(), 1, Integer::sum);
        }
    }
}
