package io.wattgraph.graph.power;

import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/** Binds {@code wattgraph.power.budgets.*} as Spring does at start: an enabled loop with default bounds, plus these keys. */
final class BudgetPropertiesBinding {
    private BudgetPropertiesBinding() {}

    static BudgetPublisherProperties bind(Map<String, String> keys) {
        Map<String, String> source = new HashMap<>(Map.of(
                "wattgraph.power.budgets.enabled", "true",
                "wattgraph.power.budgets.default-min-watts", "10",
                "wattgraph.power.budgets.default-max-watts", "100"));
        keys.forEach((k, v) -> source.put("wattgraph.power.budgets." + k, v));
        return new Binder(new MapConfigurationPropertySource(source))
                .bind("wattgraph.power.budgets", BudgetPublisherProperties.class).get();
    }
}
