package io.wattgraph.graph.power;

import io.wattgraph.schema.PowerBudget;
import io.wattgraph.schema.PowerBudgetPolicy;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The {@link PowerBudget} records of the loop, and per host the one last computed and the one last published.
 * Sequences: {@code max(computedAtNs, previous sequence of the host + 1)}, so they increase per host even if the
 * clock steps back. A budget is valid for three periods; its reason ends with the change from the last published.
 */
final class BudgetRecords {

    private final Duration period;
    // Read without the publisher's lock by its status(), so GET never waits for a cycle that is waiting for Kafka.
    private final Map<String, PowerBudget> published = new ConcurrentSkipListMap<>();
    private final Map<String, PowerBudget> computed = new ConcurrentSkipListMap<>();
    private final Map<String, Long> lastSequence = new HashMap<>();

    BudgetRecords(Duration period) {
        this.period = period;
    }

    PowerBudget next(String host, PowerBudgetPolicy policy, long now, double watts, double min, double max,
                     String reason) {
        long sequence = Math.max(now, lastSequence.getOrDefault(host, Long.MIN_VALUE) + 1);
        lastSequence.put(host, sequence);
        PowerBudget previous = published.get(host);
        PowerBudget r = PowerBudget.newBuilder()
                .setHostId(host)
                .setSequence(sequence)
                .setPolicy(policy)
                .setComputedAtNs(now)
                .setValidUntilNs(now + 3 * period.toNanos())
                .setBudgetWatts(watts)
                .setMinWatts(min)
                .setMaxWatts(max)
                .setPreviousWatts(previous == null ? null : previous.getBudgetWatts())
                .setReason(reason + change(previous, watts))
                .build();
        computed.put(host, r);
        return r;
    }

    /** Kafka acknowledged {@code r}: it is the host's published budget. */
    void published(PowerBudget r) {
        published.put(r.getHostId(), r);
    }

    /** The last published budget per host, by host id; a live view. */
    Map<String, PowerBudget> publishedByHost() {
        return published;
    }

    Collection<PowerBudget> published() {
        return published.values();
    }

    Collection<PowerBudget> computed() {
        return computed.values();
    }

    /** The change from the budget last published for the host, for the reason. */
    private static String change(PowerBudget previous, double watts) {
        if (previous == null) {
            return "; first budget for the host";
        }
        double was = previous.getBudgetWatts();
        if (Double.compare(was, watts) == 0) {
            return String.format(Locale.ROOT, "; unchanged at %.2f W", watts);
        }
        return String.format(Locale.ROOT, "; %s from %.2f W", watts > was ? "up" : "down", was);
    }
}
