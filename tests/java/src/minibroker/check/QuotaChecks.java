package minibroker.check;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

/** The AdminClient's alterClientQuotas/describeClientQuotas, and a producer and a consumer whose client id has a
 *  byte-rate quota: the broker throttles them (their throttle-time metrics), another client goes on. */
final class QuotaChecks {
    static void register(Map<String, Main.Check> checks) {
        checks.put("quotas.throttle", QuotaChecks::throttle);
    }

    static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        return metrics.entrySet().stream().filter(e -> e.getKey().name().equals(name))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue())
                .filter(v -> !Double.isNaN(v)).max().orElse(0);
    }

    static void throttle(Kafka kafka) throws Exception {
        String topic = kafka.name("quotas");
        String slow = kafka.name("slow-client");
        try (Admin admin = kafka.admin()) {
            kafka.createTopic(admin, topic, 1, null);
            ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, slow));
            AdminChecks.get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                    new ClientQuotaAlteration.Op("producer_byte_rate", 5000.0),
                    new ClientQuotaAlteration.Op("consumer_byte_rate", 5000.0))))).all());
            Map<ClientQuotaEntity, Map<String, Double>> described = AdminChecks.get(admin.describeClientQuotas(
                    ClientQuotaFilter.containsOnly(List.of(ClientQuotaFilterComponent.ofEntity(
                            ClientQuotaEntity.CLIENT_ID, slow)))).entities());
            Expect.equal("described quotas", Map.of(entity, Map.of("producer_byte_rate", 5000.0,
                    "consumer_byte_rate", 5000.0)), described);

            String value = "x".repeat(1000);
            try (KafkaProducer<String, String> producer = kafka.producer(ProducerConfig.CLIENT_ID_CONFIG, slow,
                    ProducerConfig.LINGER_MS_CONFIG, 0, ProducerConfig.BATCH_SIZE_CONFIG, 64 * 1024)) {
                for (int i = 0; i < 100; i++) {  // 100 KB, over at least 10 s: 10 KB/s against 5 KB/s
                    producer.send(new ProducerRecord<>(topic, value));
                }
                producer.flush();
                double throttled = metric(producer.metrics(), "produce-throttle-time-max");
                Expect.isTrue(throttled > 0, "the producer was throttled: produce-throttle-time-max " + throttled);
            }
            try (KafkaProducer<String, String> producer = kafka.producer(ProducerConfig.CLIENT_ID_CONFIG,
                    kafka.name("other-client"))) {
                for (int i = 0; i < 100; i++) {
                    producer.send(new ProducerRecord<>(topic, value));
                }
                producer.flush();
                double throttled = metric(producer.metrics(), "produce-throttle-time-max");
                Expect.isTrue(throttled == 0, "another client is not throttled: " + throttled);
            }
            try (KafkaConsumer<String, String> consumer = kafka.consumer(ConsumerConfig.CLIENT_ID_CONFIG, slow)) {
                TopicPartition tp = new TopicPartition(topic, 0);
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                int read = 0;
                long deadline = System.currentTimeMillis() + 60_000;
                while (read < 200 && System.currentTimeMillis() < deadline) {
                    read += consumer.poll(Duration.ofMillis(500)).count();
                }
                Expect.equal("records read by the throttled consumer", 200, read);
                double throttled = metric(consumer.metrics(), "fetch-throttle-time-max");
                Expect.isTrue(throttled > 0, "the consumer was throttled: fetch-throttle-time-max " + throttled);
            }
            AdminChecks.get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                    new ClientQuotaAlteration.Op("producer_byte_rate", null),
                    new ClientQuotaAlteration.Op("consumer_byte_rate", null))))).all());
            Expect.equal("quotas removed", Map.of(), AdminChecks.get(admin.describeClientQuotas(
                    ClientQuotaFilter.containsOnly(List.of(ClientQuotaFilterComponent.ofEntity(
                            ClientQuotaEntity.CLIENT_ID, slow)))).entities()));
        }
    }

    private QuotaChecks() {}
}
