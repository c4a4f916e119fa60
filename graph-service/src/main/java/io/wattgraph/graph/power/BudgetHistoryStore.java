package io.wattgraph.graph.power;

import io.wattgraph.graph.neo4j.Neo4jReader;
import io.wattgraph.schema.PowerBudget;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.neo4j.driver.AccessMode;
import org.neo4j.driver.Driver;
import org.neo4j.driver.Record;
import org.neo4j.driver.Session;
import org.neo4j.driver.SessionConfig;
import org.neo4j.driver.Value;
import org.springframework.stereotype.Component;

/**
 * The budgets the loop published, per host as parallel lists on one {@code (:PowerBudgetHistory {host})} node (as the
 * stream job keeps a host's windows as lists on its Host node; the stream job never touches this label), the newest
 * {@code entries} kept. An append skips a budget whose sequence is not above the host's last stored one, so writing
 * the same budgets twice changes nothing. Constant Cypher, values as parameters.
 */
@Component
public class BudgetHistoryStore {

    /** Upper bound of the entries kept per host: 24 h at a 10 s period. */
    public static final int MAX_ENTRIES = 8640;

    /** One published budget, as kept. */
    public record Entry(long sequence, String policy, long computedAtNs, long validUntilNs, double budgetWatts) {
        static Entry of(PowerBudget b) {
            return new Entry(b.getSequence(), b.getPolicy().name(), b.getComputedAtNs(), b.getValidUntilNs(),
                    b.getBudgetWatts());
        }
    }

    private static final String APPEND = """
            UNWIND $hosts AS r
            MERGE (h:PowerBudgetHistory {host: r.host})
            WITH h, r, coalesce(h.sequence, []) AS seq
            WITH h, seq, [e IN r.entries WHERE size(seq) = 0 OR e.sequence > seq[size(seq) - 1]] AS add
            WITH h, seq + [e IN add | e.sequence] AS s,
                 coalesce(h.policy, []) + [e IN add | e.policy] AS p,
                 coalesce(h.computedAtNs, []) + [e IN add | e.computedAtNs] AS c,
                 coalesce(h.validUntilNs, []) + [e IN add | e.validUntilNs] AS v,
                 coalesce(h.watts, []) + [e IN add | e.watts] AS w
            WITH h, s, p, c, v, w, CASE WHEN size(s) > $entries THEN size(s) - $entries ELSE 0 END AS cut
            SET h.sequence = s[cut..], h.policy = p[cut..], h.computedAtNs = c[cut..], h.validUntilNs = v[cut..],
                h.watts = w[cut..]
            """;
    private static final String READ = """
            MATCH (h:PowerBudgetHistory {host: $host})
            RETURN h.sequence, h.policy, h.computedAtNs, h.validUntilNs, h.watts
            """;

    private static final SessionConfig WRITE = SessionConfig.builder().withDefaultAccessMode(AccessMode.WRITE).build();

    private final Driver driver;
    private final Neo4jReader reader;

    public BudgetHistoryStore(Driver driver, Neo4jReader reader) {
        this.driver = driver;
        this.reader = reader;
    }

    /** Appends {@code budgets} (each host's in sequence order) and keeps each host's newest {@code entries}. */
    public void append(Collection<PowerBudget> budgets, int entries) {
        Map<String, List<Map<String, Object>>> byHost = new LinkedHashMap<>();
        for (PowerBudget b : budgets) {
            Map<String, Object> e = new HashMap<>();
            e.put("sequence", b.getSequence());
            e.put("policy", b.getPolicy().name());
            e.put("computedAtNs", b.getComputedAtNs());
            e.put("validUntilNs", b.getValidUntilNs());
            e.put("watts", b.getBudgetWatts());
            byHost.computeIfAbsent(b.getHostId(), h -> new ArrayList<>()).add(e);
        }
        if (byHost.isEmpty()) {
            return;
        }
        List<Map<String, Object>> hosts = new ArrayList<>();
        byHost.forEach((host, list) -> hosts.add(Map.of("host", host, "entries", list)));
        try (Session s = driver.session(WRITE)) {
            s.executeWriteWithoutResult(tx -> tx.run(APPEND, Map.of("hosts", hosts, "entries", entries)).consume());
        }
    }

    /** The host's kept budgets, oldest first; empty when it has none. */
    public List<Entry> read(String host) {
        List<Entry> out = new ArrayList<>();
        for (Record r : reader.read("power_budget_history", READ, Map.of("host", host), r -> r)) {
            List<Object> seq = list(r.get(0)), pol = list(r.get(1)), at = list(r.get(2)), until = list(r.get(3)),
                    watts = list(r.get(4));
            int n = Math.min(Math.min(seq.size(), pol.size()), Math.min(Math.min(at.size(), until.size()), watts.size()));
            for (int i = 0; i < n; i++) {
                out.add(new Entry(((Number) seq.get(i)).longValue(), (String) pol.get(i),
                        ((Number) at.get(i)).longValue(), ((Number) until.get(i)).longValue(),
                        ((Number) watts.get(i)).doubleValue()));
            }
        }
        return out;
    }

    /** Budgets of a time range, oldest first; {@code truncated}: older ones in the range were left out. */
    public record Range(List<Entry> budgets, boolean truncated) {
    }

    /**
     * The entries computed in [from, to] (null: open), preceded by the one still in force at {@code from} (computed
     * before it, valid until after it), so that a step line starts at the range's start; the newest {@code limit}.
     */
    public static Range between(List<Entry> entries, Long from, Long to, int limit) {
        List<Entry> in = new ArrayList<>();
        Entry before = null;
        for (Entry e : entries) {
            if (from != null && e.computedAtNs() < from) {
                before = e.validUntilNs() > from ? e : null;
            } else if (to == null || e.computedAtNs() <= to) {
                in.add(e);
            }
        }
        if (before != null) {
            in.add(0, before);
        }
        boolean truncated = in.size() > limit;
        return new Range(truncated ? List.copyOf(in.subList(in.size() - limit, in.size())) : in, truncated);
    }

    private static List<Object> list(Value v) {
        return v.isNull() ? List.of() : v.asList();
    }
}
