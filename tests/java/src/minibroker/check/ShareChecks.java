package minibroker.check;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/** KIP-932 share groups with the Java KafkaShareConsumer: every record delivered, released records delivered
 *  again, rejected ones never. */
final class ShareChecks {
    static final int PARTITIONS = 3;
    static final int RECORDS = 200;

    static void register(Map<String, Main.Check> checks) {
        checks.put("share.explicit_batch_optimized", kafka -> explicitAcknowledgement(kafka, "batch_optimized"));
    }

    static KafkaShareConsumer<String, String> consumer(Kafka kafka, String group, String clientId,
                                                       Object... settings) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        for (int i = 0; i < settings.length; i += 2) {
            props.put(String.valueOf(settings[i]), String.valueOf(settings[i + 1]));
        }
        return new KafkaShareConsumer<>(props);
    }

    /** The topic with `records` values "0".."records-1" round robin over its partitions, and the group set
     *  to start from the earliest offset. */
    static void setup(Kafka kafka, String topic, String group, int records) throws Exception {
        try (Admin admin = kafka.admin()) {
            kafka.createTopic(admin, topic, PARTITIONS, null);
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                    .all().get(30, TimeUnit.SECONDS);
        }
        try (KafkaProducer<String, String> producer = kafka.producer()) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, String.valueOf(i)));
            }
            producer.flush();
        }
    }

    /** Two consumers of one group, explicit acknowledgement: most records ACCEPTed, five RELEASEd at their
     *  first delivery, one REJECTed. Every record is delivered; the released ones once more (delivery count
     *  2), then accepted; the rejected one never again; nothing accepted comes back. */
    static void explicitAcknowledgement(Kafka kafka, String acquireMode) throws Exception {
        String topic = kafka.name("share-explicit-" + acquireMode);
        String group = kafka.name("share-explicit-group-" + acquireMode);
        setup(kafka, topic, group, RECORDS);
        Set<String> released = Set.of("10", "50", "91", "130", "172");
        String rejected = "100";
        Map<String, List<Integer>> deliveries = new TreeMap<>();  // value -> delivery counts seen
        Set<String> accepted = new TreeSet<>();
        List<String> errors = new ArrayList<>();
        List<KafkaShareConsumer<String, String>> consumers = new ArrayList<>();
        try {
            for (int c = 0; c < 2; c++) {
                KafkaShareConsumer<String, String> consumer = consumer(kafka, group, "share-" + c,
                        ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit",
                        ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, acquireMode,
                        ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20);
                consumer.subscribe(List.of(topic));
                consumers.add(consumer);
            }
            Expect.eventually(() -> "every record accepted: accepted " + accepted.size() + ", deliveries "
                    + deliveries + ", errors " + errors, 60, () -> {
                for (KafkaShareConsumer<String, String> consumer : consumers) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                        String value = r.value();
                        int count = r.deliveryCount().map(Short::intValue).orElse(-1);
                        List<Integer> seen = deliveries.computeIfAbsent(value, v -> new ArrayList<>());
                        seen.add(count);
                        if (accepted.contains(value) || value.equals(rejected) && seen.size() > 1) {
                            errors.add(value + " delivered again after its acknowledgement: " + seen);
                        }
                        if (released.contains(value) && seen.size() == 1) {
                            consumer.acknowledge(r, AcknowledgeType.RELEASE);
                        } else if (value.equals(rejected)) {
                            consumer.acknowledge(r, AcknowledgeType.REJECT);
                        } else {
                            consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                            accepted.add(value);
                        }
                    }
                }
                return accepted.size() == RECORDS - 1;
            });
            for (KafkaShareConsumer<String, String> consumer : consumers) {
                consumer.commitSync(Duration.ofSeconds(30));
            }
        } finally {
            for (KafkaShareConsumer<String, String> consumer : consumers) {
                consumer.close(Duration.ofSeconds(10));
            }
        }
        Expect.equal("errors", List.of(), errors);
        for (String value : released) {
            Expect.equal("the delivery counts of released " + value, List.of(1, 2), deliveries.get(value));
        }
        Expect.equal("the deliveries of rejected " + rejected, List.of(1), deliveries.get(rejected));
        Expect.equal("values delivered", RECORDS, deliveries.size());
    }
}
