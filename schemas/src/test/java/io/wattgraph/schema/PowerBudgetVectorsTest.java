package io.wattgraph.schema;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The shared PowerBudget vectors in schemas/test-vectors/power-budget, also checked by the Rust agent's
 * decoder: the bytes graph-service publishes are the bytes the agent reads.
 */
class PowerBudgetVectorsTest extends SharedVectorsTest<PowerBudget> {

  PowerBudgetVectorsTest() {
    super("power-budget", 3, PowerBudget.getClassSchema());
  }

  @Override
  PowerBudget record(JsonNode event) {
    return fromJson(event);
  }

  @Override
  ByteBuffer encode(PowerBudget r) throws IOException {
    return WattgraphSchemas.powerBudgetEncoder().encode(r);
  }

  @Override
  PowerBudget decode(byte[] b) throws IOException {
    return WattgraphSchemas.powerBudgetDecoder().decode(b);
  }

  static PowerBudget fromJson(JsonNode e) {
    return PowerBudget.newBuilder()
        .setHostId(e.get("hostId").asText())
        .setSequence(e.get("sequence").asLong())
        .setPolicy(PowerBudgetPolicy.valueOf(e.get("policy").asText()))
        .setComputedAtNs(e.get("computedAtNs").asLong())
        .setValidUntilNs(e.get("validUntilNs").asLong())
        .setBudgetWatts(e.get("budgetWatts").asDouble())
        .setMinWatts(e.get("minWatts").asDouble())
        .setMaxWatts(e.get("maxWatts").asDouble())
        .setPreviousWatts(e.get("previousWatts").isNull() ? null : e.get("previousWatts").asDouble())
        .setReason(e.get("reason").asText())
        .build();
  }
}
