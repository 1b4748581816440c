package minibroker.streams;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams application with processing.guarantee=exactly_once_v2 — a count of words, re-keyed (a
 * repartition topic) and counted in a store (a changelog topic) — fed by an idempotent producer while it runs,
 * and the output it commits, read by a read_committed consumer:
 *
 *   java ... minibroker.streams.WordCountCheck --bootstrap B --app-id A --state-dir D --records 3000 --words 30
 *        [--group-protocol streams]
 *
 * With the record cache off every input record updates its word's count once, so the committed output of a
 * word must be exactly 1, 2, ..., n: a count repeated means a transaction was applied twice, a gap one lost.
 * Whatever happens to the broker meanwhile (the test restarts it), that must hold. JSON lines on stdout:
 * {"event": "progress", ...} while it runs (the test restarts the broker on them), then {"event": "result", ...}
 * with the sequences that were wrong, the internal topics (partitions, log start offsets, configs), and what
 * Streams went through (state changes, replaced threads). With --group-protocol streams (KIP-1071) the broker
 * assigns the tasks and creates the internal topics, and the result also has what the Admin client saw of the
 * streams group: described and listed while the application runs, deleted once it closed.
 */
public final class WordCountCheck {
    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String bootstrap = opts.get("bootstrap");
        String app = opts.get("app-id");
        int records = Integer.parseInt(opts.getOrDefault("records", "3000"));
        int words = Integer.parseInt(opts.getOrDefault("words", "30"));
        // The input runs at most this far ahead of the output, so that the broker restarts while both flow.
        long lead = Long.parseLong(opts.getOrDefault("lead", "300"));
        double timeout = Double.parseDouble(opts.getOrDefault("timeout", "180"));
        // Of the input and output topics and Streams' internal ones (-1: the broker's default).
        short replication = Short.parseShort(opts.getOrDefault("replication-factor", "-1"));
        String input = app + "-input";
        String output = app + "-output";
        String groupProtocol = opts.getOrDefault("group-protocol", "classic");

        try (Admin admin = Admin.create(props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(input, Optional.of(3), Optional.of(replication)),
                            new NewTopic(output, Optional.of(3), Optional.of(replication))))
                    .all().get(30, TimeUnit.SECONDS);
        }

        List<String> states = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicInteger replacedThreads = new AtomicInteger();
        KafkaStreams streams = new KafkaStreams(topology(input, output), props(
                StreamsConfig.APPLICATION_ID_CONFIG, app,
                StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2,
                StreamsConfig.STATE_DIR_CONFIG, opts.get("state-dir"),
                StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2,
                StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100,
                StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0,
                StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 500,
                StreamsConfig.REPLICATION_FACTOR_CONFIG, replication,
                StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName(),
                StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName(),
                StreamsConfig.GROUP_PROTOCOL_CONFIG, groupProtocol));
        streams.setStateListener((now, before) -> states.add(before + "->" + now));
        streams.setUncaughtExceptionHandler(exception -> {
            // A thread that died of a broker outage is replaced; exactly-once must hold all the same.
            replacedThreads.incrementAndGet();
            System.err.println("stream thread died, replaced: " + exception);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        streams.start();

        AtomicLong acked = new AtomicLong();
        AtomicLong outputSeen = new AtomicLong();
        List<Exception> sendErrors = java.util.Collections.synchronizedList(new ArrayList<>());
        Thread producer = new Thread(() -> produce(bootstrap, input, records, words, lead, outputSeen, acked, sendErrors),
                "input-producer");
        producer.start();

        Map<String, List<Long>> counts = new TreeMap<>();
        long expectedPerWord = records / words;
        long deadline = System.nanoTime() + (long) (timeout * 1e9);
        int outputRecords = 0;
        try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(props(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName()))) {
            List<TopicPartition> tps = List.of(new TopicPartition(output, 0), new TopicPartition(output, 1),
                    new TopicPartition(output, 2));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long lastProgress = 0;
            while (System.nanoTime() < deadline) {
                for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
                    counts.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                    outputRecords++;
                }
                outputSeen.set(outputRecords);
                if (System.nanoTime() - lastProgress > 250_000_000L) {
                    lastProgress = System.nanoTime();
                    System.out.printf("{\"event\": \"progress\", \"acked\": %d, \"output\": %d, \"state\": \"%s\"}%n",
                            acked.get(), outputRecords, streams.state());
                    System.out.flush();
                }
                if (counts.size() == words && counts.values().stream()
                        .allMatch(c -> c.get(c.size() - 1) >= expectedPerWord)) {
                    break;
                }
            }
            // A short while more: a duplicate committed late would show as a count past the expected one.
            long settle = System.nanoTime() + 1_000_000_000L;
            while (System.nanoTime() < settle) {
                for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
                    counts.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                    outputRecords++;
                }
            }
        }
        producer.join(60_000);
        String running = groupProtocol.equals("streams") ? StreamsGroupAdmin.whileRunning(bootstrap, app) : "null";
        boolean closed = streams.close(Duration.ofSeconds(30));
        String afterClose = groupProtocol.equals("streams") ? StreamsGroupAdmin.afterClose(bootstrap, app) : "null";

        List<String> wrong = new ArrayList<>();
        for (int w = 0; w < words; w++) {
            String word = "word-" + w;
            List<Long> seen = counts.getOrDefault(word, List.of());
            List<Long> expected = new ArrayList<>();
            for (long c = 1; c <= expectedPerWord; c++) {
                expected.add(c);
            }
            if (!seen.equals(expected)) {
                wrong.add(word + ": " + describe(seen));
            }
        }
        if (counts.size() != words) {
            wrong.add("words counted: " + counts.keySet());
        }

        StringBuilder result = new StringBuilder("{\"event\": \"result\"");
        result.append(", \"acked\": ").append(acked.get());
        result.append(", \"send_errors\": ").append(json(sendErrors.stream().map(String::valueOf).toList()));
        result.append(", \"output_records\": ").append(outputRecords);
        result.append(", \"wrong\": ").append(json(wrong));
        result.append(", \"states\": ").append(json(new ArrayList<>(states)));
        result.append(", \"replaced_threads\": ").append(replacedThreads.get());
        // The listener is told after the state changed, so it may not have heard of NOT_RUNNING yet.
        result.append(", \"closed\": ").append(closed).append(", \"final_state\": ").append(json(
                streams.state().toString()));
        result.append(", \"topics\": ").append(topics(bootstrap, app, input, output));
        result.append(", \"group_while_running\": ").append(running);
        result.append(", \"group_after_close\": ").append(afterClose);
        System.out.println(result.append("}"));
        System.out.flush();
        System.exit(0);
    }

    static org.apache.kafka.streams.Topology topology(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((key, word) -> word, Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static void produce(String bootstrap, String input, int records, int words, long lead, AtomicLong outputSeen,
                        AtomicLong acked, List<Exception> errors) {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 300000,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 300000,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName()))) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(input, "record-" + i, "word-" + (i % words)), (md, error) -> {
                    if (error != null) {
                        errors.add(error);
                    } else {
                        acked.incrementAndGet();
                    }
                });
                while (i - outputSeen.get() >= lead) {
                    Thread.sleep(5);
                }
            }
            producer.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The internal topics as the broker describes them: partitions, log start offsets (the repartition
     *  topic is purged by Streams), and the configs set on the topic itself. */
    static String topics(String bootstrap, String app, String input, String output) throws Exception {
        StringBuilder out = new StringBuilder("{");
        try (Admin admin = Admin.create(props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            List<String> names = new ArrayList<>();
            for (String name : admin.listTopics().names().get(30, TimeUnit.SECONDS)) {
                if (name.startsWith(app + "-")) {
                    names.add(name);
                }
            }
            names.sort(null);
            Map<String, TopicDescription> descriptions = admin.describeTopics(names).allTopicNames()
                    .get(30, TimeUnit.SECONDS);
            List<ConfigResource> resources = new ArrayList<>();
            names.forEach(n -> resources.add(new ConfigResource(ConfigResource.Type.TOPIC, n)));
            Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get(30, TimeUnit.SECONDS);
            String sep = "";
            for (String name : names) {
                Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
                descriptions.get(name).partitions().forEach(p -> earliest.put(new TopicPartition(name, p.partition()),
                        OffsetSpec.earliest()));
                long start = 0;
                for (var info : admin.listOffsets(earliest).all().get(30, TimeUnit.SECONDS).values()) {
                    start += info.offset();
                }
                List<String> set = new ArrayList<>();
                for (ConfigEntry e : configs.get(new ConfigResource(ConfigResource.Type.TOPIC, name)).entries()) {
                    if (e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) {
                        set.add(json(e.name()) + ": " + json(e.value()));
                    }
                }
                out.append(sep).append(json(name)).append(": {\"partitions\": ")
                        .append(descriptions.get(name).partitions().size())
                        .append(", \"replicas\": ").append(descriptions.get(name).partitions().get(0).replicas().size())
                        .append(", \"log_start_offsets\": ").append(start)
                        .append(", \"configs\": {").append(String.join(", ", set)).append("}}");
                sep = ", ";
            }
        }
        return out.append("}").toString();
    }

    /** Where a word's counts first differ from 1, 2, 3, ... */
    static String describe(List<Long> seen) {
        for (int i = 0; i < seen.size(); i++) {
            if (seen.get(i) != i + 1) {
                return seen.size() + " counts; at position " + i + " expected " + (i + 1) + ", got "
                        + seen.subList(Math.max(0, i - 2), Math.min(seen.size(), i + 3));
            }
        }
        return seen.size() + " counts, the last " + (seen.isEmpty() ? "none" : seen.get(seen.size() - 1));
    }

    static Properties props(Object... keyValues) {
        Properties props = new Properties();
        for (int i = 0; i < keyValues.length; i += 2) {
            props.put(String.valueOf(keyValues[i]), String.valueOf(keyValues[i + 1]));
        }
        return props;
    }

    static String json(String s) {
        return minibroker.check.Main.json(s);
    }

    static String json(List<String> items) {
        List<String> quoted = new ArrayList<>();
        items.forEach(i -> quoted.add(json(i)));
        return "[" + String.join(", ", quoted) + "]";
    }

    private WordCountCheck() {}
}
