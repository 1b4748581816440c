package minibroker.share;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Two KafkaShareConsumers of one share group, explicit acknowledgement, on a cluster whose brokers the test kills
 * meanwhile:
 *
 *   java ... minibroker.share.ShareFailoverCheck --bootstrap B --topic T --group G --records 600 --pause-at 200,400
 *
 * The records ("0".."records-1", round robin over three partitions replicated three times) are produced first;
 * the consumers accept every record they get and commit their acknowledgements after each poll. An
 * acknowledgement counts once its commit answered no error for the partition. When that count reaches a pause
 * point the check prints {"event": "pause", ...} and waits for a line on stdin (the test kills a broker
 * meanwhile); the consumers go on once it comes. At the end, {"event": "result", ...}: the records never
 * acknowledged, those delivered again after their acknowledgement counted (which must never happen), how often
 * records were delivered, and the commit errors seen.
 */
public final class ShareFailoverCheck {
    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String bootstrap = opts.get("bootstrap");
        String topic = opts.get("topic");
        String group = opts.get("group");
        int records = Integer.parseInt(opts.getOrDefault("records", "600"));
        double timeout = Double.parseDouble(opts.getOrDefault("timeout", "240"));
        List<Integer> pauses = new ArrayList<>();
        for (String at : opts.getOrDefault("pause-at", "").split(",")) {
            if (!at.isBlank()) {
                pauses.add(Integer.parseInt(at.trim()));
            }
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, Optional.of(3), Optional.of((short) 3))))
                    .all().get(60, TimeUnit.SECONDS);
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), List.of(
                    new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                            AlterConfigOp.OpType.SET)))).all().get(60, TimeUnit.SECONDS);
        }
        Map<String, Object> producerProps = new HashMap<>();
        producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        producerProps.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, i % 3, null, String.valueOf(i))).get(60, TimeUnit.SECONDS);
            }
        }

        Set<Integer> confirmed = new TreeSet<>();
        Map<Integer, List<Integer>> deliveries = new TreeMap<>();
        List<String> redelivered = new ArrayList<>();
        List<String> commitErrors = new ArrayList<>();
        List<KafkaShareConsumer<String, String>> consumers = new ArrayList<>();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + (long) (timeout * 1e9);
        try {
            for (int c = 0; c < 2; c++) {
                Map<String, Object> props = new HashMap<>();
                props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                props.put(ConsumerConfig.CLIENT_ID_CONFIG, "share-failover-" + c);
                props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                props.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
                props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20);
                KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props);
                consumer.subscribe(List.of(topic));
                consumers.add(consumer);
            }
            while (confirmed.size() < records && System.nanoTime() < deadline) {
                for (KafkaShareConsumer<String, String> consumer : consumers) {
                    Map<Integer, List<Integer>> polled = new HashMap<>();  // partition -> values acknowledged
                    try {
                        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                            int value = Integer.parseInt(r.value());
                            List<Integer> seen = deliveries.computeIfAbsent(value, v -> new ArrayList<>());
                            seen.add(r.deliveryCount().map(Short::intValue).orElse(-1));
                            if (confirmed.contains(value)) {
                                redelivered.add(value + " " + seen);
                            }
                            consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                            polled.computeIfAbsent(r.partition(), p -> new ArrayList<>()).add(value);
                        }
                        if (!polled.isEmpty()) {
                            Map<TopicIdPartition, Optional<KafkaException>> result =
                                    consumer.commitSync(Duration.ofSeconds(30));
                            result.forEach((tp, error) -> {
                                if (error.isEmpty()) {
                                    confirmed.addAll(polled.getOrDefault(tp.partition(), List.of()));
                                } else {
                                    commitErrors.add(tp + ": " + error.get());
                                }
                            });
                        }
                    } catch (KafkaException e) {
                        commitErrors.add(e.toString());
                    }
                }
                while (!pauses.isEmpty() && confirmed.size() >= pauses.get(0)) {
                    System.out.println("{\"event\": \"pause\", \"confirmed\": " + confirmed.size() + "}");
                    System.out.flush();
                    stdin.readLine();
                    pauses.remove(0);
                }
            }
        } finally {
            for (KafkaShareConsumer<String, String> consumer : consumers) {
                try {
                    consumer.close(Duration.ofSeconds(20));
                } catch (KafkaException e) {
                    commitErrors.add("close: " + e);
                }
            }
        }
        List<Integer> missing = new ArrayList<>();
        for (int i = 0; i < records; i++) {
            if (!confirmed.contains(i)) {
                missing.add(i);
            }
        }
        long again = deliveries.values().stream().filter(d -> d.size() > 1).count();
        System.out.println("{\"event\": \"result\", \"confirmed\": " + confirmed.size() + ", \"missing\": "
                + missing + ", \"redelivered_after_ack\": " + quoted(redelivered) + ", \"delivered\": "
                + deliveries.size() + ", \"delivered_again\": " + again + ", \"commit_errors\": "
                + quoted(commitErrors) + "}");
        System.out.flush();
    }

    private static String quoted(List<String> texts) {
        List<String> out = new ArrayList<>();
        for (String text : texts) {
            out.add("\"" + text.replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"");
        }
        return out.toString();
    }
}
