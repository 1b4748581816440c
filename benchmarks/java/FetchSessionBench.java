import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.LongSerializer;

/** The fetch-session bench row: a consumer assigned PARTITIONS partitions (no group), a producer in the same
 *  JVM writing one record every INTERVAL ms to one partition after another; each record carries its send time
 *  (System.nanoTime), so the consumer measures the end-to-end latency. Prints "start" when the measured part
 *  begins, "end" when it is over (the bench reads the broker's CPU at both), then one JSON line. */
public final class FetchSessionBench {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        int partitions = Integer.parseInt(args[1]);
        int records = Integer.parseInt(args[2]);
        long intervalMs = Long.parseLong(args[3]);
        String topic = "fetch-sessions-" + Long.toHexString(System.nanoTime());
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(120, TimeUnit.SECONDS);
        }
        Properties consumerProps = new Properties();
        consumerProps.putAll(common);
        consumerProps.put("key.deserializer", LongDeserializer.class.getName());
        consumerProps.put("value.deserializer", LongDeserializer.class.getName());
        Properties producerProps = new Properties();
        producerProps.putAll(common);
        producerProps.put("key.serializer", LongSerializer.class.getName());
        producerProps.put("value.serializer", LongSerializer.class.getName());
        producerProps.put("linger.ms", "0");
        List<TopicPartition> tps = IntStream.range(0, partitions).mapToObj(p -> new TopicPartition(topic, p))
                .collect(Collectors.toList());
        ConcurrentLinkedQueue<Exception> failures = new ConcurrentLinkedQueue<>();
        try (KafkaConsumer<Long, Long> consumer = new KafkaConsumer<>(consumerProps);
             KafkaProducer<Long, Long> producer = new KafkaProducer<>(producerProps)) {
            producer.partitionsFor(topic);
            // Every partition's end offset, asked until each is led (Kafka's createTopics returns before its
            // broker leads the new partitions), and the consumer placed there: a record written after this is
            // one the consumer reads (a lazy seekToEnd resolved late would skip it).
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps, Duration.ofSeconds(120));
            consumer.assign(tps);
            ends.forEach(consumer::seek);
            long warm = System.nanoTime() + 3_000_000_000L;  // positions known, the fetch session open
            while (System.nanoTime() < warm) {
                consumer.poll(Duration.ofMillis(100));
            }
            List<Double> latencies = new ArrayList<>();
            double fetchesBefore = fetchTotal(consumer);
            System.out.println("start");
            System.out.flush();
            Thread writer = new Thread(() -> {
                try {
                    for (int i = 0; i < records; i++) {
                        producer.send(new ProducerRecord<>(topic, (i * 37) % partitions, null, System.nanoTime()));
                        Thread.sleep(intervalMs);
                    }
                    producer.flush();
                } catch (Exception e) {
                    failures.add(e);
                }
            });
            writer.start();
            long deadline = System.nanoTime() + (records * intervalMs + 60_000) * 1_000_000L;
            while (latencies.size() < records && System.nanoTime() < deadline) {
                for (ConsumerRecord<Long, Long> r : consumer.poll(Duration.ofMillis(100))) {
                    latencies.add((System.nanoTime() - r.value()) / 1e6);
                }
            }
            writer.join();
            double fetches = fetchTotal(consumer) - fetchesBefore;
            System.out.println("end");
            Collections.sort(latencies);
            int n = latencies.size();
            System.out.println(String.format(java.util.Locale.ROOT,
                    "{\"records\": %d, \"received\": %d, \"fetches\": %.0f, \"p50_ms\": %.2f, \"p99_ms\": %.2f, "
                    + "\"failures\": %d}", records, n, fetches, n > 0 ? latencies.get(n / 2) : -1.0,
                    n > 0 ? latencies.get(Math.min(n - 1, (int) (n * 0.99))) : -1.0, failures.size()));
        }
    }

    static double fetchTotal(KafkaConsumer<?, ?> consumer) {
        for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
            MetricName name = e.getKey();
            if (name.name().equals("fetch-total") && name.group().equals("consumer-fetch-manager-metrics")) {
                return ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        return 0;
    }
}
