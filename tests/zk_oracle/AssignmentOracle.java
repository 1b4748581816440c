import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import kafka.controller.ControllerContext;
import kafka.controller.PartitionLeaderElectionAlgorithms;
import kafka.controller.ReplicaAssignment;
import kafka.zk.AdminZkClient;
import org.apache.kafka.admin.AdminUtils;
import org.apache.kafka.admin.BrokerMetadata;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Kafka 3.9's own replica assignment and leader election, for comparison with zk/replica_assignment.py and
 * zk/leader_election.py. Reads one JSON case per line on stdin, writes one JSON answer per line:
 * {"result": ...} or {"error": "ExceptionClass"}; seeded assignments also give the two numbers Kafka drew.
 */
public class AssignmentOracle {
    static final ObjectMapper JSON = new ObjectMapper();
    static final ControllerContext CONTEXT = new ControllerContext();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        StringBuilder out = new StringBuilder();
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode c = JSON.readTree(line);
            ObjectNode answer = JSON.createObjectNode();
            try {
                answer.set("result", JSON.valueToTree(run(c, answer)));
            } catch (Exception e) {
                answer.put("error", e.getClass().getSimpleName());
                answer.put("message", String.valueOf(e.getMessage()));
            }
            out.append(JSON.writeValueAsString(answer)).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    static Object run(JsonNode c, ObjectNode answer) throws Exception {
        switch (c.get("op").asText()) {
            case "assign": {
                List<BrokerMetadata> brokers = brokers(c.get("brokers"));
                int fixed = c.get("fixed").asInt();
                if (c.hasNonNull("seed")) {
                    Field rand = AdminUtils.class.getDeclaredField("RAND");
                    rand.setAccessible(true);
                    ((Random) rand.get(null)).setSeed(c.get("seed").asLong());
                    Random twin = new Random(c.get("seed").asLong());
                    answer.putArray("draws").add(twin.nextInt(brokers.size())).add(twin.nextInt(brokers.size()));
                }
                return AdminUtils.assignReplicasToBrokers(brokers, c.get("n").asInt(), c.get("rf").asInt(), fixed,
                    c.get("startPartition").asInt());
            }
            case "grow": {
                AdminZkClient admin = new AdminZkClient(null, scala.Option.empty());
                scala.collection.mutable.HashMap<Object, ReplicaAssignment> existing = new scala.collection.mutable.HashMap<>();
                c.get("existing").fields().forEachRemaining(e ->
                    existing.put(Integer.valueOf(e.getKey()), ReplicaAssignment.apply(ints(e.getValue()))));
                scala.Option<scala.collection.Map<Object, scala.collection.Seq<Object>>> given = scala.Option.empty();
                if (c.hasNonNull("given")) {
                    scala.collection.mutable.HashMap<Object, scala.collection.Seq<Object>> g = new scala.collection.mutable.HashMap<>();
                    c.get("given").fields().forEachRemaining(e -> g.put(Integer.valueOf(e.getKey()), ints(e.getValue())));
                    given = scala.Option.apply(g);
                }
                scala.collection.Map<Object, ReplicaAssignment> added = admin.createNewPartitionsAssignment(
                    c.get("topic").asText(), existing, CollectionConverters.asScala(brokers(c.get("brokers"))).toSeq(),
                    c.get("num").asInt(), given);
                Map<Object, ReplicaAssignment> javaAdded = CollectionConverters.asJava(added);
                java.util.TreeMap<Integer, List<Object>> result = new java.util.TreeMap<>();
                javaAdded.forEach((p, a) -> result.put((Integer) p, CollectionConverters.asJava(a.replicas())));
                return result;
            }
            case "offline":
                return opt(PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection(ints(c.get("assignment")),
                    ints(c.get("isr")), set(c.get("live")), c.get("unclean").asBoolean(), CONTEXT));
            case "reassign":
                return opt(PartitionLeaderElectionAlgorithms.reassignPartitionLeaderElection(ints(c.get("assignment")),
                    ints(c.get("isr")), set(c.get("live"))));
            case "preferred":
                return opt(PartitionLeaderElectionAlgorithms.preferredReplicaPartitionLeaderElection(
                    ints(c.get("assignment")), ints(c.get("isr")), set(c.get("live"))));
            case "shutdown":
                return opt(PartitionLeaderElectionAlgorithms.controlledShutdownPartitionLeaderElection(
                    ints(c.get("assignment")), ints(c.get("isr")), set(c.get("live")), set(c.get("shuttingDown"))));
            default:
                throw new IllegalArgumentException(c.get("op").asText());
        }
    }

    static List<BrokerMetadata> brokers(JsonNode node) {
        List<BrokerMetadata> brokers = new ArrayList<>();
        for (JsonNode b : node)
            brokers.add(new BrokerMetadata(b.get(0).asInt(), b.get(1).isNull() ? Optional.empty() : Optional.of(b.get(1).asText())));
        return brokers;
    }

    static scala.collection.immutable.Seq<Object> ints(JsonNode node) {
        List<Object> list = new ArrayList<>();
        for (JsonNode v : node) list.add(v.asInt());
        return CollectionConverters.asScala(list).toList();
    }

    static scala.collection.immutable.Set<Object> set(JsonNode node) {
        return ints(node).toSet();
    }

    static Integer opt(scala.Option<Object> value) {
        return value.isDefined() ? (Integer) value.get() : null;
    }
}
