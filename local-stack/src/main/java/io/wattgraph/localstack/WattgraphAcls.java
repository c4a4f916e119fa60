package io.wattgraph.localstack;

import io.wattgraph.localstack.KafkaSecurity.Principal;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * The ACLs of a Wattgraph cluster with the default topic, group and transactional-id names (the table
 * in docs/contracts.md "Kafka principals and ACLs"): each component may do what it does and nothing
 * else. READ and WRITE imply DESCRIBE; since Kafka 3.0 WRITE on a topic also allows the idempotent
 * producer, so no cluster-level grant is needed.
 */
public final class WattgraphAcls {
  private WattgraphAcls() {}

  /** What the agents write (ConnectionEvent, ResourceSample, CgroupStats, TransactionStats). */
  public static final List<String> AGENT_TOPICS = List.of("wattgraph.connections", "wattgraph.resources",
      "wattgraph.cgroups", "wattgraph.transactions");
  /** What the stream job reads: the agents' topics and the service mappings. */
  public static final List<String> JOB_INPUTS = List.of("wattgraph.connections", "wattgraph.resources",
      "wattgraph.cgroups", "wattgraph.transactions", "wattgraph.service-mappings");
  /** What the stream job writes, transactionally. */
  public static final List<String> JOB_OUTPUTS = List.of("wattgraph.metrics", "wattgraph.edge-metrics",
      "wattgraph.namespace-metrics", "wattgraph.dlq");
  public static final String SERVICE_MAPPINGS = "wattgraph.service-mappings";
  public static final String POWER_BUDGETS = "wattgraph.power-budgets";
  /** The topics that are not compacted: the agents' and the job's outputs. */
  public static final List<String> TOPICS = List.of("wattgraph.connections", "wattgraph.resources",
      "wattgraph.cgroups", "wattgraph.transactions", "wattgraph.metrics", "wattgraph.edge-metrics",
      "wattgraph.namespace-metrics", "wattgraph.dlq");
  /** The agents' budget consumers' group ids (wattgraph-agent-HOST-budgets). */
  public static final String AGENT_GROUP_PREFIX = "wattgraph-agent-";
  /** The service mapper's reader's group id. */
  public static final String MAPPER_GROUP = "wattgraph-service-mapper-reader";
  /** The job's --group-id: prefix of its consumer groups and of its sinks' transactional ids. */
  public static final String JOB_GROUP_PREFIX = "wattgraph-correlation";

  public static List<AclBinding> bindings() {
    List<AclBinding> out = new ArrayList<>();
    topics(out, Principal.AGENT, AclOperation.WRITE, AGENT_TOPICS);
    topics(out, Principal.AGENT, AclOperation.READ, List.of(POWER_BUDGETS));
    // librdkafka assigns partitions only in a consumer with a group.id, and then looks up the group's
    // coordinator (DESCRIBE), though nothing is committed: no READ, so no offsets and no membership.
    out.add(allow(Principal.AGENT, ResourceType.GROUP, AGENT_GROUP_PREFIX, PatternType.PREFIXED,
        AclOperation.DESCRIBE));
    topics(out, Principal.SERVICE_MAPPER, AclOperation.WRITE, List.of(SERVICE_MAPPINGS));
    // It reads the topic back at start, to tombstone mappings deleted while it did not run.
    topics(out, Principal.SERVICE_MAPPER, AclOperation.READ, List.of(SERVICE_MAPPINGS));
    out.add(allow(Principal.SERVICE_MAPPER, ResourceType.GROUP, MAPPER_GROUP, PatternType.LITERAL,
        AclOperation.DESCRIBE));
    topics(out, Principal.STREAM_JOBS, AclOperation.READ, JOB_INPUTS);
    topics(out, Principal.STREAM_JOBS, AclOperation.WRITE, JOB_OUTPUTS);
    out.add(allow(Principal.STREAM_JOBS, ResourceType.GROUP, JOB_GROUP_PREFIX, PatternType.PREFIXED,
        AclOperation.READ));
    out.add(allow(Principal.STREAM_JOBS, ResourceType.TRANSACTIONAL_ID, JOB_GROUP_PREFIX, PatternType.PREFIXED,
        AclOperation.WRITE));
    topics(out, Principal.GRAPH_SERVICE, AclOperation.WRITE, List.of(POWER_BUDGETS));
    return out;
  }

  private static void topics(List<AclBinding> out, Principal p, AclOperation op, List<String> topics) {
    topics.forEach(t -> out.add(allow(p, ResourceType.TOPIC, t, PatternType.LITERAL, op)));
  }

  static AclBinding allow(Principal p, ResourceType type, String name, PatternType pattern, AclOperation op) {
    return new AclBinding(new ResourcePattern(type, name, pattern),
        new AccessControlEntry("User:" + p.user, "*", op, AclPermissionType.ALLOW));
  }
}
