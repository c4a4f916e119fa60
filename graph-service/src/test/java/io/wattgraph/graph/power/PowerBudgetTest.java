package io.wattgraph.graph.power;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * HyPPO (PowerThesis Eq. 4.1/4.2) and PRESTO (PowerThesis Eq. 5.1-5.9) with hand-computed values on PowerThesis
 * Fig. 5.4's graph shape.
 */
class PowerBudgetTest {

    @Test
    void hyppoSumsIdleContainersAndProportionalTerms() {
        HostPower h = new HostPower("n1", 80.0, null, 50.0, 40, 200);
        List<Hyppo.ContainerPower> containers = List.of(
                new Hyppo.ContainerPower("n1", "c1", 20, 1.5, 1.0),   // i = +0.5 core x 10 W = +5
                new Hyppo.ContainerPower("n1", "c2", 10, 0.5, 1.0),   // i = -5
                new Hyppo.ContainerPower("n1", "c3", 7, 0.3, null),   // no request: 0
                new Hyppo.ContainerPower("n1", "c4", 3, null, 2.0),   // no usage: 0
                new Hyppo.ContainerPower("n2", "c5", 99, 4.0, 1.0));  // another host
        Budget b = Hyppo.budgets(List.of(h), containers, 10).get(0);
        assertThat(b.budgetW()).isEqualTo(50 + 25 + 5 + 7 + 3, within(1e-9)); // 90
        assertThat(b.terms().get("proportionalW")).isEqualTo(0.0, within(1e-9));
        assertThat(b.reason()).startsWith("Eq. 4.1: idle 50.00 W + 4 containers 40.00 W + proportional 0.00 W");

        List<Hyppo.ContainerPower> hungry = List.of(new Hyppo.ContainerPower("n1", "c1", 20, 3.0, 1.0)); // +20
        Budget capped = Hyppo.budgets(List.of(new HostPower("n1", 80.0, null, 50.0, 40, 85)), hungry, 10).get(0);
        assertThat(capped.budgetW()).isEqualTo(85);
        assertThat(capped.terms().get("unclampedW")).isEqualTo(90.0, within(1e-9));
        assertThat(capped.reason()).endsWith("capped at the host maximum 85.00 W");
        Budget raised = Hyppo.budgets(List.of(new HostPower("n1", 80.0, null, 10.0, 40, 85)),
                List.of(), 10).get(0);
        assertThat(raised.budgetW()).isEqualTo(40);
        assertThat(raised.reason()).contains("raised to the host minimum");
    }

    /**
     * PowerThesis Fig. 5.4: internet -> 0; 0 -> 1, 2; 1 -> 3, 4; 2 -> 5; 4 -> 6; 5 -> 6, 7. Served rates (R/s):
     * 0:100 1:100 2:100 3:60 4:40 5:100 6:100 7:50. Edge rates: 0->1 100, 0->2 100, 1->3 60, 1->4 40, 2->5 100,
     * 4->6 40, 5->6 60, 5->7 50; so λclt: 0:200 1:100 2:100 4:40 5:110.
     * Pods 0-3 on host A, 4-7 on host B (8 cores); every edge's client latency is the server's + 1 ms.
     */
    static ServiceGraph fig54(double entryLatencyMs) {
        double[] served = {100, 100, 100, 60, 40, 100, 100, 50};
        double[] serviceTime = {2, 1, 1, 4, 2, 3, 10, 5};
        double[] cpu = {0.5, 0.1, 0.1, 0.1, 0.1, 0.1, 0.9, 0.1};
        double[] threads = {1, 1, 1, 1, 1, 1, 2, 1};
        List<ServiceNode> nodes = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            double latency = i == 0 ? entryLatencyMs : 10;
            Metrics m = new Metrics(cpu[i], threads[i], served[i], latency, null, null, null, null, null, null, null,
                    null, serviceTime[i]);
            nodes.add(new ServiceNode("p" + i, "pod", "p" + i, i < 4 ? "A" : "B", null, "p" + i, "ns", null, null, 1,
                    8.0, m));
        }
        nodes.add(ServiceNode.external("internet"));
        List<ServiceEdge> edges = new ArrayList<>();
        edges.add(ServiceEdge.requests("internet", "p0", 100, entryLatencyMs + 1));
        int[][] calls = {{0, 1, 100}, {0, 2, 100}, {1, 3, 60}, {1, 4, 40}, {2, 5, 100}, {4, 6, 40}, {5, 6, 60},
                {5, 7, 50}};
        for (int[] c : calls) {
            edges.add(ServiceEdge.requests("p" + c[0], "p" + c[1], c[2], 11.0)); // server latency 10 + 1 ms network
        }
        return new ServiceGraph(nodes, edges);
    }

    static final double A56 = 100.0 * 100 / (110 * 110); // 0.826446
    static final double A57 = 100.0 * 50 / (110 * 110);  // 0.413223

    @Test
    void alphaAndBetaAsInFigure54() {
        Presto.Result r = Presto.compute(fig54(15), null, 20, List.of());
        assertThat(r.entryPoint()).isEqualTo("p0");
        Map<String, Double> a = r.alpha();
        assertThat(a.get("p0")).isEqualTo(1.0);
        assertThat(a.get("p1")).isEqualTo(0.25, within(1e-12)); // 100*100/200^2
        assertThat(a.get("p2")).isEqualTo(0.25, within(1e-12));
        assertThat(a.get("p3")).isEqualTo(0.6, within(1e-12));  // 100*60/100^2
        assertThat(a.get("p4")).isEqualTo(0.4, within(1e-12));
        assertThat(a.get("p5")).isEqualTo(1.0, within(1e-12));
        assertThat(a.get("p6")).isEqualTo(2.5, within(1e-12));  // max(40*100/40^2 = 2.5, 100*100/110^2)
        assertThat(a.get("p7")).isEqualTo(A57, within(1e-12));
        Map<String, Double> b = r.beta();
        assertThat(b.get("p0")).isEqualTo(1.0);
        assertThat(b.get("p1")).isEqualTo(0.25, within(1e-12));
        assertThat(b.get("p3")).isEqualTo(0.15, within(1e-12));  // β1 α3
        assertThat(b.get("p4")).isEqualTo(0.1, within(1e-12));   // β1 α4
        assertThat(b.get("p5")).isEqualTo(0.25, within(1e-12));  // β2 α5
        assertThat(b.get("p6")).isEqualTo(0.25, within(1e-12));  // max(β4 α46 = 0.25, β5 α56 = 0.2066)
        assertThat(b.get("p7")).isEqualTo(0.25 * A57, within(1e-12));
        // PowerThesis Eq. 5.3
        double sOut = 2 + 0.25 + 0.25 + 0.15 * 4 + 0.1 * 2 + 0.25 * 3 + 0.25 * 10 + 0.25 * A57 * 5;
        double nOut = 0.25 + 0.25 + 0.6 + 0.4 + 1 + 2.5 + 2.5 + A57; // N = 1 ms on every edge, α_j the highest
        assertThat(r.serviceTimeMs()).isEqualTo(sOut, within(1e-9));
        assertThat(r.networkTimeMs()).isEqualTo(nOut, within(1e-9));
        assertThat(r.estimatedLatencyMs()).isEqualTo(sOut + nOut, within(1e-9));
        assertThat(r.latencyMs()).isEqualTo(15);
        assertThat(r.latencyMeasured()).isTrue();
        // PowerThesis Eq. 5.4
        assertThat(r.targetServiceTimesMs().get("p6")).isEqualTo(10 * (20 - nOut) / sOut, within(1e-9));
    }

    @Test
    void budgetsPerHostWithBoundsAndTheSlaEscape() {
        List<HostPower> hosts = List.of(new HostPower("A", 100.0, 40.0, null, 60, 150),
                new HostPower("B", 80.0, 30.0, null, 60, 150), new HostPower("C", 70.0, 10.0, null, 60, 150));
        Presto.Result r = Presto.compute(fig54(15), "p0", 20, hosts);
        double sOut = r.serviceTimeMs();
        double nOut = r.networkTimeMs();
        double scale = (20 - nOut) / sOut;
        double el = Math.abs(20 - 15) / 20.0; // PowerThesis Eq. 5.7: 0.25
        assertThat(r.latencyError()).isEqualTo(el, within(1e-12));
        // Host A: candidate p0 (U = 0.5 / min(8, 1)); e_u = 0.5 - 100 R/s x 2 ms x scale.
        double euA = 0.5 - 100 * (2 * scale) / 1000;
        assertThat(r.budgets().get(0).budgetW()).isEqualTo(100 + euA * el * 40, within(1e-9));
        assertThat(r.budgets().get(0).reason()).startsWith("Eq. 5.8").contains("pod p0");
        // Host B: candidate p6 (U = 0.9 / 2 = 0.45); e_u = 0.45 - 100 R/s x 10 ms x scale < 0: less power.
        double euB = 0.45 - 100 * (10 * scale) / 1000;
        double rawB = 80 + euB * el * 30;
        assertThat(euB).isNegative();
        assertThat(r.budgets().get(1).budgetW()).isEqualTo(Math.max(60, rawB), within(1e-9));
        // Host C runs nothing of the application: unchanged.
        assertThat(r.budgets().get(2).budgetW()).isEqualTo(70);
        assertThat(r.budgets().get(2).reason()).contains("unchanged");

        // Bounds: host B's minimum above the computed value.
        Presto.Result bounded = Presto.compute(fig54(15), "p0", 20,
                List.of(new HostPower("B", 80.0, 30.0, null, 79, 150)));
        assertThat(bounded.budgets().get(0).budgetW()).isEqualTo(79);
        assertThat(bounded.budgets().get(0).reason()).contains("raised to the host minimum 79.00 W");

        // PowerThesis Eq. 5.9: latency 45 ms > 2 x 20 ms: every host gets its maximum.
        Presto.Result escape = Presto.compute(fig54(45), "p0", 20, hosts);
        assertThat(escape.slaEscape()).isTrue();
        assertThat(escape.budgets()).extracting(Budget::budgetW).containsExactly(150.0, 150.0, 150.0);
        assertThat(escape.budgets().get(0).reason()).contains("> 2 x SLA");
        // Exactly 2 x SLA is not an escape.
        assertThat(Presto.compute(fig54(40), "p0", 20, hosts).slaEscape()).isFalse();
    }

    @Test
    void serviceTimeFromEq51WhenNotMeasured() {
        // i -> j with α_ij = 100*100/100^2 = 1; L_i = 30, L_j = 10, edge latency 12 (N = 2): S_i = 30 - (10 + 2) = 18.
        List<ServiceNode> nodes = List.of(
                new ServiceNode("i", "pod", "i", "A", null, null, null, null, null, 1, 4.0,
                        new Metrics(null, null, 100.0, 30.0, null, null, null, null, null, null, null, null, null)),
                new ServiceNode("j", "pod", "j", "A", null, null, null, null, null, 1, 4.0,
                        new Metrics(null, null, 100.0, 10.0, null, null, null, null, null, null, null, null, null)));
        ServiceGraph g = new ServiceGraph(nodes, List.of(ServiceEdge.requests("i", "j", 100, 12.0)));
        Presto.Result r = Presto.compute(g, "i", 50, List.of());
        assertThat(r.serviceTimesMs().get("i")).isEqualTo(18.0, within(1e-9));
        assertThat(r.serviceTimesMs().get("j")).isEqualTo(10.0, within(1e-9));
        // = L_i, consistent with PowerThesis Eq. 5.1
        assertThat(r.estimatedLatencyMs()).isEqualTo(18 + 10 + 2, within(1e-9));
    }

    @Test
    void cyclesDoNotGrowBetaWithoutBound() {
        // a -> b -> c -> b: α_bc = 100*100/50^2 = 4 and α_cb = 4, a gain-16 cycle; the back edge c -> b is ignored.
        List<ServiceNode> nodes = new ArrayList<>();
        for (String id : List.of("a", "b", "c")) {
            nodes.add(new ServiceNode(id, "pod", id, "A", null, null, null, null, null, 1, 4.0,
                    new Metrics(null, null, 100.0, 10.0, null, null, null, null, null, null, null, null, 1.0)));
        }
        ServiceGraph g = new ServiceGraph(nodes, List.of(ServiceEdge.requests("a", "b", 100, 11.0),
                ServiceEdge.requests("b", "c", 50, 11.0), ServiceEdge.requests("c", "b", 50, 11.0)));
        Presto.Result r = Presto.compute(g, "a", 50, List.of());
        assertThat(r.beta().get("b")).isEqualTo(1.0, within(1e-12));
        assertThat(r.beta().get("c")).isEqualTo(4.0, within(1e-12));
        assertThat(r.alpha().get("b")).isEqualTo(4.0, within(1e-12)); // max(α_ab = 1, α_cb = 4)
        assertThat(r.warnings()).contains("1 call edge(s) closing a cycle ignored for beta");
    }
}
