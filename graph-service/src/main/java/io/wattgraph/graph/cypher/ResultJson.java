package io.wattgraph.graph.cypher;

import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.neo4j.driver.Value;
import org.neo4j.driver.Values;
import org.neo4j.driver.types.Node;
import org.neo4j.driver.types.Path;
import org.neo4j.driver.types.Relationship;
import org.neo4j.driver.types.TypeSystem;

/**
 * Converts driver values to JSON-ready objects while counting their (estimated) JSON size against a budget,
 * so one huge value stops the conversion as soon as it passes the budget instead of after it is built.
 */
final class ResultJson {

    /** Thrown when the budget is spent; the rows converted before stay valid. */
    static final class OverBudget extends RuntimeException {
        OverBudget() {
            super(null, null, false, false);
        }
    }

    private static final TypeSystem TYPES = TypeSystem.getDefault();

    private final long budget;
    private long used;

    ResultJson(long budget) {
        this.budget = budget;
    }

    long used() {
        return used;
    }

    private void spend(long bytes) {
        used += bytes;
        if (used > budget) {
            throw new OverBudget();
        }
    }

    Object convert(Value v) {
        spend(1); // separator
        if (v.isNull()) {
            spend(4);
            return null;
        }
        if (v.hasType(TYPES.NODE())) {
            Node n = v.asNode();
            Map<String, Object> m = new LinkedHashMap<>();
            spend(40 + n.elementId().length());
            m.put("elementId", n.elementId());
            List<String> labels = new ArrayList<>();
            n.labels().forEach(l -> {
                spend(l.length() + 3);
                labels.add(l);
            });
            m.put("labels", labels);
            m.put("properties", properties(n.asMap(Values::value)));
            return m;
        }
        if (v.hasType(TYPES.RELATIONSHIP())) {
            Relationship r = v.asRelationship();
            Map<String, Object> m = new LinkedHashMap<>();
            spend(80 + r.elementId().length() + r.type().length() + r.startNodeElementId().length()
                    + r.endNodeElementId().length());
            m.put("elementId", r.elementId());
            m.put("type", r.type());
            m.put("startElementId", r.startNodeElementId());
            m.put("endElementId", r.endNodeElementId());
            m.put("properties", properties(r.asMap(Values::value)));
            return m;
        }
        if (v.hasType(TYPES.PATH())) {
            Path p = v.asPath();
            List<Object> nodes = new ArrayList<>();
            p.nodes().forEach(n -> nodes.add(convert(Values.value(n))));
            List<Object> rels = new ArrayList<>();
            p.relationships().forEach(r -> rels.add(convert(Values.value(r))));
            spend(30);
            return Map.of("nodes", nodes, "relationships", rels);
        }
        if (v.hasType(TYPES.LIST())) {
            spend(2);
            List<Object> list = new ArrayList<>();
            for (Value item : v.values()) {
                list.add(convert(item));
            }
            return list;
        }
        if (v.hasType(TYPES.MAP())) {
            return properties(v.asMap(Values::value));
        }
        if (v.hasType(TYPES.BYTES())) {
            byte[] bytes = v.asByteArray();
            spend(bytes.length * 4L / 3 + 4);
            return Base64.getEncoder().encodeToString(bytes);
        }
        if (v.hasType(TYPES.STRING())) {
            String s = v.asString();
            spend(s.length() + 2L);
            return s;
        }
        if (v.hasType(TYPES.INTEGER()) || v.hasType(TYPES.FLOAT()) || v.hasType(TYPES.BOOLEAN())) {
            spend(8);
            return v.asObject();
        }
        String text = v.toString(); // temporal, duration, point: their Cypher text form
        spend(text.length() + 2L);
        return text;
    }

    private Map<String, Object> properties(Map<String, Value> map) {
        spend(2);
        Map<String, Object> sorted = new TreeMap<>();
        for (Map.Entry<String, Value> e : map.entrySet()) {
            spend(e.getKey().length() + 3L);
            sorted.put(e.getKey(), convert(e.getValue()));
        }
        return sorted;
    }
}
