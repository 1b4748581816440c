package minibroker.check;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.TimestampType;

/** Plain and idempotent producers with each codec: every record acknowledged at the offset it is read back
 *  from, with its key, value, headers and timestamp; batches stored compressed; the idempotent producer's
 *  sequence numbers known to the broker (DescribeProducers), the plain producer's not. */
final class ProducerChecks {
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    static final int RECORDS = 300;
    static final int PARTITIONS = 3;
    static final long TIMESTAMP = 1_700_000_000_000L;

    static void register(Map<String, Main.Check> checks) {
        checks.put("producer.plain", kafka -> codecs(kafka, false));
        checks.put("producer.idempotent", kafka -> codecs(kafka, true));
    }

    static void codecs(Kafka kafka, boolean idempotent) throws Exception {
        String kind = idempotent ? "idempotent" : "plain";
        Map<String, Long> sizes = new HashMap<>();
        try (Admin admin = kafka.admin()) {
            List<Integer> brokers = new ArrayList<>();
            admin.describeCluster().nodes().get().forEach(n -> brokers.add(n.id()));
            for (String codec : CODECS) {
                String topic = kafka.name(kind + "-" + codec);
                kafka.createTopic(admin, topic, PARTITIONS, null);
                Map<TopicPartition, List<String>> acked = produce(kafka, topic, codec, idempotent);
                checkReadBack(kafka, topic, codec, acked);
                sizes.put(codec, logSize(admin, brokers, topic));
                checkProducerState(admin, topic, acked, idempotent);
            }
        }
        long plain = sizes.get("none");
        for (String codec : CODECS) {
            if (!codec.equals("none")) {
                // 300 values of ~250 repetitive bytes: a codec that the broker kept shrinks them several times.
                Expect.isTrue(sizes.get(codec) * 3 < plain,
                        () -> "the " + codec + " log is " + sizes.get(codec) + " bytes, uncompressed " + plain
                                + ": were the batches stored compressed?");
            }
        }
    }

    static String value(int i) {
        return "value-" + i + "-" + "abcdefghij".repeat(25);
    }

    /** Sends RECORDS records; returns, per partition, the values in the order of the offsets acknowledged. */
    static Map<TopicPartition, List<String>> produce(Kafka kafka, String topic, String codec, boolean idempotent)
            throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<String, String> producer = kafka.producer(
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, idempotent,
                ProducerConfig.ACKS_CONFIG, idempotent ? "all" : "1",
                ProducerConfig.LINGER_MS_CONFIG, 20,
                ProducerConfig.BATCH_SIZE_CONFIG, 32768)) {
            for (int i = 0; i < RECORDS; i++) {
                ProducerRecord<String, String> record = new ProducerRecord<>(topic, null, TIMESTAMP + i, "key-" + i,
                        value(i));
                record.headers().add("index", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                record.headers().add("codec", codec.getBytes(StandardCharsets.UTF_8));
                futures.add(producer.send(record));
            }
            producer.flush();
        }
        Map<TopicPartition, Map<Long, String>> byOffset = new HashMap<>();
        for (int i = 0; i < RECORDS; i++) {
            RecordMetadata md = futures.get(i).get(30, TimeUnit.SECONDS);
            // The record's own timestamp; but a retried batch the broker already had is answered, as Kafka's
            // UnifiedLog does, with the first append's max timestamp as its log-append time.
            long ts = md.timestamp();
            Expect.isTrue(ts == TIMESTAMP + i || (ts > TIMESTAMP + i && ts < TIMESTAMP + RECORDS),
                    "timestamp acknowledged for record " + i + ": " + ts);
            String previous = byOffset.computeIfAbsent(new TopicPartition(md.topic(), md.partition()),
                    tp -> new HashMap<>()).put(md.offset(), value(i));
            Expect.isTrue(previous == null, "two records acknowledged at offset " + md.offset() + " of " + md.partition());
        }
        Map<TopicPartition, List<String>> acked = new HashMap<>();
        byOffset.forEach((tp, offsets) -> {
            List<String> values = new ArrayList<>();
            for (long offset = 0; offset < offsets.size(); offset++) {
                Expect.isTrue(offsets.containsKey(offset), "no record acknowledged at offset " + offset + " of " + tp);
                values.add(offsets.get(offset));
            }
            acked.put(tp, values);
        });
        Expect.isTrue(acked.size() > 1, "the keys spread over more than one partition: " + acked.keySet());
        return acked;
    }

    static void checkReadBack(Kafka kafka, String topic, String codec, Map<TopicPartition, List<String>> acked)
            throws Exception {
        List<ConsumerRecord<String, String>> records = kafka.readAll(topic, PARTITIONS, "read_uncommitted");
        Expect.equal(codec + ": records read back", RECORDS, records.size());
        for (ConsumerRecord<String, String> r : records) {
            TopicPartition tp = new TopicPartition(r.topic(), r.partition());
            Expect.equal(codec + ": value at offset " + r.offset() + " of " + tp,
                    acked.get(tp).get((int) r.offset()), r.value());
            int index = Integer.parseInt(r.key().substring("key-".length()));
            Expect.equal(codec + ": value of " + r.key(), value(index), r.value());
            List<String> headers = new ArrayList<>();
            for (Header h : r.headers()) {
                headers.add(h.key() + "=" + new String(h.value(), StandardCharsets.UTF_8));
            }
            Expect.equal(codec + ": headers of " + r.key(), List.of("index=" + index, "codec=" + codec), headers);
            Expect.equal(codec + ": timestamp of " + r.key(), TIMESTAMP + index, r.timestamp());
            Expect.equal(codec + ": timestamp type", TimestampType.CREATE_TIME, r.timestampType());
        }
    }

    /** The topic's size on disk, from every broker's DescribeLogDirs (one replica per partition here). */
    static long logSize(Admin admin, List<Integer> brokers, String topic) throws Exception {
        List<LogDirDescription> dirs = new ArrayList<>();
        admin.describeLogDirs(brokers).allDescriptions().get(30, TimeUnit.SECONDS)
                .values().forEach(byDir -> dirs.addAll(byDir.values()));
        long size = 0;
        int partitions = 0;
        for (LogDirDescription dir : dirs) {
            for (Map.Entry<TopicPartition, ReplicaInfo> e : dir.replicaInfos().entrySet()) {
                if (e.getKey().topic().equals(topic)) {
                    size += e.getValue().size();
                    partitions++;
                }
            }
        }
        Expect.equal("partitions of " + topic + " in DescribeLogDirs", PARTITIONS, partitions);
        return size;
    }

    static void checkProducerState(Admin admin, String topic, Map<TopicPartition, List<String>> acked,
                                   boolean idempotent) throws Exception {
        Map<TopicPartition, PartitionProducerState> states = admin.describeProducers(acked.keySet()).all()
                .get(30, TimeUnit.SECONDS);
        for (Map.Entry<TopicPartition, List<String>> e : acked.entrySet()) {
            List<ProducerState> producers = states.get(e.getKey()).activeProducers();
            if (!idempotent) {
                Expect.equal("producers known on " + e.getKey() + " after a plain producer", List.of(), producers);
                continue;
            }
            Expect.equal("producers known on " + e.getKey(), 1, producers.size());
            ProducerState state = producers.get(0);
            Expect.equal("last sequence on " + e.getKey(), e.getValue().size() - 1, state.lastSequence());
            Expect.equal("producer epoch on " + e.getKey(), 0, state.producerEpoch());
            Expect.isTrue(state.producerId() >= 0, "a producer id on " + e.getKey());
            Expect.isTrue(state.currentTransactionStartOffset().isEmpty(), "no open transaction on " + e.getKey());
        }
    }

    private ProducerChecks() {}
}
