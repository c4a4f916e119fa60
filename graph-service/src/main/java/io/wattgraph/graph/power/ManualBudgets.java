package io.wattgraph.graph.power;

import io.wattgraph.graph.power.ManualBudgetStore.Manual;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The MANUAL budgets in force, by host. Each is stored in Neo4j ({@link ManualBudgetStore}) before it counts, so a
 * restart never forgets an acknowledged budget, and read back after a restart once Neo4j answers (budgets set since
 * win). A store failure leaves the budgets as they were and reaches the caller.
 */
final class ManualBudgets {

    private static final Logger log = LoggerFactory.getLogger(ManualBudgets.class);

    private final ManualBudgetStore store;
    private final Map<String, Manual> budgets = new ConcurrentSkipListMap<>();
    private volatile boolean restored; // the stored budgets have been read back (retried until they are)

    ManualBudgets(ManualBudgetStore store) {
        this.store = store;
    }

    /** Reads back the stored budgets unless done already; a failure goes to {@code failed}, to be retried. */
    void restore(Consumer<RuntimeException> failed) {
        if (restored) {
            return;
        }
        try {
            Map<String, Manual> stored = store.all();
            stored.forEach(budgets::putIfAbsent);
            restored = true;
            if (!stored.isEmpty()) {
                log.info("power budgets: MANUAL budgets restored from Neo4j for {}", stored.keySet());
            }
        } catch (RuntimeException e) {
            failed.accept(e);
        }
    }

    /** Stores, then applies, a host's MANUAL budget. */
    Manual set(String host, double watts, String reason, long nowNs) {
        Manual m = new Manual(watts, reason, nowNs);
        store.save(host, m);
        budgets.put(host, m);
        return m;
    }

    /** Deletes, then drops, a host's MANUAL budget; false when it has none. */
    boolean clear(String host) {
        if (!budgets.containsKey(host)) {
            return false;
        }
        store.delete(host);
        return budgets.remove(host) != null;
    }

    boolean has(String host) {
        return budgets.containsKey(host);
    }

    /** The budgets by host id, sorted; a live view. */
    Map<String, Manual> byHost() {
        return budgets;
    }

    static String reason(Manual m) {
        return m.reason() == null || m.reason().isBlank() ? "set by an administrator"
                : "set by an administrator: " + m.reason();
    }
}
