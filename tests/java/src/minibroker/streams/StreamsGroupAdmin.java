package minibroker.streams;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;

/**
 * What the Java Admin client sees of an application's streams group (KIP-1071): describeStreamsGroups,
 * listGroups(forStreamsGroups()), listStreamsGroupOffsets while it runs; deleteStreamsGroups once it closed.
 * Each returns a JSON object for WordCountCheck's result.
 */
final class StreamsGroupAdmin {
    static String whileRunning(String bootstrap, String app) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            StreamsGroupDescription group = admin.describeStreamsGroups(List.of(app)).describedGroups().get(app)
                    .get(30, TimeUnit.SECONDS);
            Set<String> processes = new TreeSet<>();
            int active = 0;
            for (StreamsGroupMemberDescription m : group.members()) {
                processes.add(m.processId());
                for (StreamsGroupMemberAssignment.TaskIds t : m.assignment().activeTasks()) {
                    active += t.partitions().size();
                }
            }
            List<String> subtopologies = new ArrayList<>();
            for (StreamsGroupSubtopologyDescription s : group.subtopologies()) {
                List<String> changelogs = new ArrayList<>();
                s.stateChangelogTopics().forEach((name, info) -> changelogs.add(json(name) + ": " + info.partitions()));
                List<String> repartitions = new ArrayList<>();
                s.repartitionSourceTopics().forEach((name, info) -> repartitions.add(json(name) + ": "
                        + info.partitions()));
                subtopologies.add("{\"id\": " + json(s.subtopologyId()) + ", \"source_topics\": "
                        + WordCountCheck.json(s.sourceTopics()) + ", \"repartition_sink_topics\": "
                        + WordCountCheck.json(s.repartitionSinkTopics()) + ", \"changelog_partitions\": {"
                        + String.join(", ", changelogs) + "}, \"repartition_partitions\": {"
                        + String.join(", ", repartitions) + "}}");
            }
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listStreamsGroupOffsets(
                    Map.of(app, new ListStreamsGroupOffsetsSpec())).partitionsToOffsetAndMetadata(app)
                    .get(30, TimeUnit.SECONDS);
            return "{\"state\": " + json(group.groupState().toString()) + ", \"members\": " + group.members().size()
                    + ", \"processes\": " + processes.size() + ", \"active_tasks\": " + active
                    + ", \"group_epoch\": " + group.groupEpoch() + ", \"target_assignment_epoch\": "
                    + group.targetAssignmentEpoch() + ", \"topology_epoch\": " + group.topologyEpoch()
                    + ", \"assignor\": " + json(group.assignorName().orElse("")) + ", \"subtopologies\": ["
                    + String.join(", ", subtopologies) + "], \"listed\": " + listed(admin, app)
                    + ", \"committed_partitions\": " + offsets.size() + "}";
        }
    }

    /** Once the application closed (its members left): empty, then deleted, then gone. */
    static String afterClose(String bootstrap, String app) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            String state = "";
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (System.nanoTime() < deadline) {
                state = admin.describeStreamsGroups(List.of(app)).describedGroups().get(app).get(30, TimeUnit.SECONDS)
                        .groupState().toString();
                if (state.equals(GroupState.EMPTY.toString())) {
                    break;
                }
                Thread.sleep(200);
            }
            String deleted = "ok";
            try {
                admin.deleteStreamsGroups(List.of(app)).all().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                deleted = e.getCause().getClass().getSimpleName();
            }
            String described;
            try {
                described = admin.describeStreamsGroups(List.of(app)).describedGroups().get(app)
                        .get(30, TimeUnit.SECONDS).groupState().toString();
            } catch (ExecutionException e) {
                described = e.getCause().getClass().getSimpleName();
            }
            return "{\"state\": " + json(state) + ", \"deleted\": " + json(deleted) + ", \"described_after\": "
                    + json(described) + ", \"listed_after\": " + listed(admin, app) + "}";
        }
    }

    private static String listed(Admin admin, String app) throws Exception {
        for (GroupListing g : admin.listGroups(ListGroupsOptions.forStreamsGroups()).all().get(30, TimeUnit.SECONDS)) {
            if (g.groupId().equals(app)) {
                return "{\"type\": " + json(g.type().map(Object::toString).orElse("")) + ", \"state\": "
                        + json(g.groupState().map(Object::toString).orElse("")) + "}";
            }
        }
        return "null";
    }

    private static Admin admin(String bootstrap) {
        return Admin.create(WordCountCheck.props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
    }

    private static String json(String s) {
        return WordCountCheck.json(s);
    }

    private StreamsGroupAdmin() {}
}
