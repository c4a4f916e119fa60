package io.wattgraph.graph.analysis;

import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * A traffic heat-map (BlackBox §7.3, Figs. 5/6): {@code bytes[i][j]} is the payload sent from {@code labels[i]} to
 * {@code labels[j]} (a TALKS_TO edge contributes its client-to-server bytes to [client][server] and its
 * server-to-client bytes to [server][client]). The diagonal is traffic within a host / between processes of
 * one type. Labels are sorted; external peers are {@code external}.
 */
public record TrafficMatrix(String dimension, List<String> labels, long[][] bytes, long totalBytes) {

    public static TrafficMatrix byHost(ServiceGraph graph) {
        return project("host", graph, n -> n.external() || n.hostId() == null ? "external" : n.hostId());
    }

    public static TrafficMatrix byProcessType(ServiceGraph graph) {
        return project("processType", graph,
                n -> n.external() ? "external" : n.processType() == null ? "?" : n.processType());
    }

    static TrafficMatrix project(String dimension, ServiceGraph graph, Function<ServiceNode, String> key) {
        Map<String, ServiceNode> byId = graph.nodesById();
        TreeSet<String> labelSet = new TreeSet<>();
        graph.nodes().forEach(n -> labelSet.add(key.apply(n)));
        List<String> labels = List.copyOf(labelSet);
        Map<String, Integer> index = new TreeMap<>();
        for (int i = 0; i < labels.size(); i++) {
            index.put(labels.get(i), i);
        }
        long[][] bytes = new long[labels.size()][labels.size()];
        long total = 0;
        for (ServiceEdge e : graph.edges()) {
            int c = index.get(key.apply(byId.get(e.source())));
            int s = index.get(key.apply(byId.get(e.target())));
            bytes[c][s] += e.bytesClientToServer();
            bytes[s][c] += e.bytesServerToClient();
            total += e.bytes();
        }
        return new TrafficMatrix(dimension, labels, bytes, total);
    }

    public long get(String from, String to) {
        int i = labels.indexOf(from);
        int j = labels.indexOf(to);
        return i < 0 || j < 0 ? 0 : bytes[i][j];
    }
}
