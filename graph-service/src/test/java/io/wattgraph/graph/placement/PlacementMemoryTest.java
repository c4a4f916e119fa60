package io.wattgraph.graph.placement;

import static org.assertj.core.api.Assertions.assertThat;

import io.wattgraph.graph.analysis.Aggregator;
import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import io.wattgraph.graph.placement.PlacementProblem.NodeCapacity;
import io.wattgraph.graph.placement.PlacementProblem.Workload;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Placement sizes pods by their containers' memory (the Container's {@code memoryBytes}, the peak of its latest
 * cgroup window) and never moves one onto a host whose known memory it would exceed.
 */
class PlacementMemoryTest {
    static final double GIB = 1L << 30;
    static final String WEB = "c0".repeat(32);
    static final String DB = "d0".repeat(32);

    static Metrics cpu(double cores) {
        return new Metrics(cores, null, null, null, null, null, null, null, null, null, null, null, null);
    }

    static Metrics container(double cores, double memoryBytes) {
        return new Metrics(cores, null, null, null, null, null, null, null, null, memoryBytes, null, null, null);
    }

    /** web-a and web-b in container WEB (pod shop/web-0) on n0, db in DB (shop/db-0) on n1; web-a calls db. */
    static List<Workload> podWorkloads() {
        ServiceGraph processes = new ServiceGraph(List.of(
                ServiceNode.process("n0/1/1", "java", "n0", WEB, "java", null, cpu(0.5)).withKubernetes("web-0", "shop", "web"),
                ServiceNode.process("n0/2/1", "java", "n0", WEB, "java", null, cpu(0.5)).withKubernetes("web-0", "shop", "web"),
                ServiceNode.process("n1/3/1", "postgres", "n1", DB, "postgres", null, cpu(1)).withKubernetes("db-0", "shop", "db")),
                List.of(ServiceEdge.traffic("n0/1/1", "n1/3/1", 4000, 1000)));
        Map<String, Metrics> containers = Map.of("container:" + WEB, container(1, 6 * GIB),
                "container:" + DB, container(1, 3 * GIB));
        ServiceGraph pods = Aggregator.aggregate(processes, Level.POD, containers);
        return PlacementInputs.workloadsOf(pods, Map.of());
    }

    static PlacementProblem problem(double n1MemoryBytes) {
        return new PlacementProblem(podWorkloads(), List.of(new NodeCapacity("n0", 4, 8 * GIB),
                new NodeCapacity("n1", 4, n1MemoryBytes)), List.of(new PlacementProblem.Traffic("pod:shop/web-0",
                "pod:shop/db-0", 5000)), 0.0);
    }

    @Test
    void aPodNeedsItsContainersMemoryCountedOncePerContainer() {
        assertThat(podWorkloads()).containsExactlyInAnyOrder(
                new Workload("pod:shop/web-0", 1, 6 * GIB, "n0", "shop", "web-0"),
                new Workload("pod:shop/db-0", 1, 3 * GIB, "n1", "shop", "db-0"));
    }

    /**
     * A container's Kubernetes memory request (the stream job's {@code memoryRequestBytes}) counts when larger than
     * its measured peak (the node reserves it), the peak when larger (the container uses it).
     */
    @Test
    void theLargerOfTheMemoryRequestAndTheMeasuredPeak() {
        ServiceGraph processes = new ServiceGraph(List.of(
                ServiceNode.process("n0/1/1", "java", "n0", WEB, "java", null, cpu(0.5)).withKubernetes("web-0", "shop", "web"),
                ServiceNode.process("n1/3/1", "postgres", "n1", DB, "postgres", null, cpu(1)).withKubernetes("db-0", "shop", "db")),
                List.of());
        Metrics web = new Metrics(1.0, null, null, null, null, null, null, null, null, 6 * GIB, 0.5, 2 * GIB, null);
        Metrics db = new Metrics(1.0, null, null, null, null, null, null, null, null, 3 * GIB, null, 5 * GIB, null);
        ServiceGraph pods = Aggregator.aggregate(processes, Level.POD, Map.of("container:" + WEB, web, "container:" + DB, db));
        assertThat(PlacementInputs.workloadsOf(pods, Map.of())).containsExactlyInAnyOrder(
                new Workload("pod:shop/web-0", 0.5, 6 * GIB, "n0", "shop", "web-0"),
                new Workload("pod:shop/db-0", 1, 5 * GIB, "n1", "shop", "db-0"));
        // Over the kept windows too: db's highest window (7 GiB) is above its request.
        assertThat(PlacementInputs.workloadsOf(pods, Map.of(), Map.of("pod:shop/db-0", 7 * GIB)))
                .contains(new Workload("pod:shop/db-0", 1, 7 * GIB, "n1", "shop", "db-0"));
    }

    @Test
    void noMovePastAHostsKnownMemory() {
        // 6 + 3 GiB fit on neither 8 GiB host: the pods stay apart, whatever the traffic between them.
        for (String method : PlacementService.METHODS) {
            PlacementResult r = PlacementService.solve(problem(8 * GIB), method);
            assertThat(r.feasible()).as(method).isTrue();
            assertThat(r.assignment()).as(method).isEqualTo(Map.of("pod:shop/web-0", "n0", "pod:shop/db-0", "n1"));
            assertThat(r.crossNodeBytesAfter()).as(method).isEqualTo(5000);
        }
        // n1's memory unknown (no memoryBytes on the Host): only CPU bounds it, and both go there.
        PlacementResult unknown = PlacementService.solve(problem(Double.MAX_VALUE), "exact");
        assertThat(unknown.assignment()).isEqualTo(Map.of("pod:shop/web-0", "n1", "pod:shop/db-0", "n1"));
        assertThat(unknown.crossNodeBytesAfter()).isZero();
        // Said as unknown, not as a capacity of 1.8e308 bytes.
        assertThat(unknown.loads()).filteredOn(l -> l.node().equals("n1")).singleElement()
                .satisfies(l -> assertThat(l.memoryCapacity()).isNull());
        assertThat(unknown.loads()).filteredOn(l -> l.node().equals("n0")).singleElement()
                .satisfies(l -> assertThat(l.memoryCapacity()).isEqualTo(8 * GIB));
    }
}
