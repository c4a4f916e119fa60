package io.wattgraph.graph.power;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.Map;

/** A host's power budget for the next period with the reason and the terms it was computed from. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Budget(String host, String policy, Double previousW, double budgetW, String reason,
                     Map<String, Double> terms) {
}
