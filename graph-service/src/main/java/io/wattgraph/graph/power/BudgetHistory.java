package io.wattgraph.graph.power;

import io.wattgraph.schema.PowerBudget;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Writes every budget Kafka acknowledged to {@link BudgetHistoryStore}. While Neo4j refuses, the budgets wait here
 * (the newest {@code entries} per host, as many as the store keeps) and go with the next write: a Neo4j outage
 * shorter than the kept range loses no published budget. Used under the publisher's lock.
 */
final class BudgetHistory {

    private final BudgetHistoryStore store;
    private final int entries;
    private final Map<String, ArrayDeque<PowerBudget>> pending = new LinkedHashMap<>();

    BudgetHistory(BudgetHistoryStore store, int entries) {
        this.store = store;
        this.entries = entries;
    }

    /** Adds {@code acknowledged} to what waits and writes it all; a failure goes to {@code failed}, kept for later. */
    void record(Collection<PowerBudget> acknowledged, Consumer<RuntimeException> failed) {
        for (PowerBudget b : acknowledged) {
            ArrayDeque<PowerBudget> q = pending.computeIfAbsent(b.getHostId(), h -> new ArrayDeque<>());
            q.addLast(b);
            if (q.size() > entries) {
                q.removeFirst();
            }
        }
        if (pending.isEmpty()) {
            return;
        }
        List<PowerBudget> all = new ArrayList<>();
        pending.values().forEach(all::addAll);
        try {
            store.append(all, entries);
            pending.clear();
        } catch (RuntimeException e) {
            failed.accept(e);
        }
    }
}
