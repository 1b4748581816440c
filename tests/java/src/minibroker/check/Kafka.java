package minibroker.check;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The clients of one check run, all against one bootstrap address, with short timeouts so that a broker
 *  that does not answer fails a check within its deadline instead of hanging it. */
public final class Kafka {
    public final String bootstrap;
    /** The broker plays a ZooKeeper-mode Kafka (a 3.x profile): it reports no KIP-584 features, as Kafka 3.9's
     *  ZooKeeper-mode brokers do. */
    public final boolean zookeeperMode;
    /** Settings every client gets (a secured listener's security.protocol, sasl.mechanism, sasl.jaas.config). */
    public final Map<String, String> clientConfig = new HashMap<>();
    private final String run = UUID.randomUUID().toString().substring(0, 8);

    public Kafka(String bootstrap, boolean zookeeperMode) {
        this.bootstrap = bootstrap;
        this.zookeeperMode = zookeeperMode;
    }

    /** A name unique to this run: checks never see each other's topics, groups or transactional ids. */
    public String name(String prefix) {
        return prefix + "-" + run;
    }

    public Properties props(Object... keyValues) {
        Properties props = new Properties();
        props.putAll(clientConfig);
        for (int i = 0; i < keyValues.length; i += 2) {
            props.put(String.valueOf(keyValues[i]), String.valueOf(keyValues[i + 1]));
        }
        return props;
    }

    public Admin admin() {
        return Admin.create(props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000));
    }

    public KafkaProducer<String, String> producer(Object... keyValues) {
        Properties props = props(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60000,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
        props.putAll(props(keyValues));
        return new KafkaProducer<>(props);
    }

    public KafkaConsumer<String, String> consumer(Object... keyValues) {
        Properties props = props(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
                ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        props.putAll(props(keyValues));
        return new KafkaConsumer<>(props);
    }

    public void createTopic(Admin admin, String topic, int partitions, Map<String, String> configs)
            throws Exception {
        NewTopic newTopic = new NewTopic(topic, partitions, (short) 1);
        if (configs != null) {
            newTopic.configs(configs);
        }
        admin.createTopics(List.of(newTopic)).all().get(30, TimeUnit.SECONDS);
    }

    public void createTopic(String topic, int partitions) throws Exception {
        try (Admin admin = admin()) {
            createTopic(admin, topic, partitions, null);
        }
    }

    public static List<TopicPartition> partitions(String topic, int count) {
        return IntStream.range(0, count).mapToObj(p -> new TopicPartition(topic, p)).collect(Collectors.toList());
    }

    /** Every record of `topic` (its `partitions` partitions) below the end offsets the consumer sees (the last
     *  stable offsets under read_committed), read without a group from the beginning. */
    public List<ConsumerRecord<String, String>> readAll(String topic, int partitions, String isolationLevel)
            throws InterruptedException {
        try (KafkaConsumer<String, String> consumer = consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolationLevel)) {
            List<TopicPartition> tps = partitions(topic, partitions);
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps);
            List<ConsumerRecord<String, String>> records = new ArrayList<>();
            Expect.eventually("reading " + topic + " up to " + ends, 30, () -> {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    records.add(r);
                }
                return tps.stream().allMatch(tp -> consumer.position(tp) >= ends.get(tp));
            });
            return records;
        }
    }

    public static List<String> values(Collection<ConsumerRecord<String, String>> records) {
        return records.stream().map(ConsumerRecord::value).collect(Collectors.toList());
    }

    /** Values by partition, in offset order. */
    public static Map<Integer, List<String>> valuesByPartition(Collection<ConsumerRecord<String, String>> records) {
        Map<Integer, List<String>> byPartition = new HashMap<>();
        for (ConsumerRecord<String, String> r : records) {
            byPartition.computeIfAbsent(r.partition(), p -> new ArrayList<>()).add(r.value());
        }
        return byPartition;
    }
}
