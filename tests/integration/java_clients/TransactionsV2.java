// Kafka 4.1's Java producer (transaction version 2 when the broker finalizes it) for
// tests/integration/test_transactions_v2.py. Prints one line per step: "committed N", "aborted N",
// "fenced <exception class>", or "error <exception>".
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TransactionsV2 {
    static KafkaProducer<String, String> producer(String bootstrap, String id) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", id);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "30000");
        return new KafkaProducer<>(p);
    }

    static void batch(KafkaProducer<String, String> producer, String topic, String prefix, int n) throws Exception {
        for (int i = 0; i < n; i++) {
            producer.send(new ProducerRecord<>(topic, i % 2, null, prefix + i)).get();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        KafkaProducer<String, String> first = producer(bootstrap, "tv2");
        first.initTransactions();
        first.beginTransaction();
        batch(first, topic, "a", 5);
        first.commitTransaction();
        System.out.println("committed 5");
        first.beginTransaction();
        batch(first, topic, "b", 3);
        first.abortTransaction();
        System.out.println("aborted 3");
        first.beginTransaction();
        batch(first, topic, "c", 2);
        first.commitTransaction();
        System.out.println("committed 2");
        // A second instance with the same transactional id fences the first one.
        first.beginTransaction();
        batch(first, topic, "z", 1);
        KafkaProducer<String, String> second = producer(bootstrap, "tv2");
        second.initTransactions();
        System.out.println("second initialized");
        try {
            batch(first, topic, "zz", 1);
            first.commitTransaction();
            System.out.println("error zombie committed");
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            System.out.println("fenced " + cause.getClass().getSimpleName());
        }
        first.close();
        second.beginTransaction();
        batch(second, topic, "d", 4);
        second.commitTransaction();
        System.out.println("committed 4");
        second.close();
        System.out.flush();
    }
}
