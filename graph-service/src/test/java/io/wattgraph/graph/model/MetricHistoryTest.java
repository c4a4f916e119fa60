package io.wattgraph.graph.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class MetricHistoryTest {

    @Test
    void p95IsTheNearestRank() {
        List<Double> v = new ArrayList<>();
        for (int i = 20; i >= 1; i--) {
            v.add((double) i);
        }
        v.add(null);
        MetricHistory.Summary s = MetricHistory.summary(v);
        assertThat(s.windows()).isEqualTo(20);
        // 95 % of 20 values = 19: the 19th smallest.
        assertThat(s.p95()).isEqualTo(19.0);
        assertThat(s.max()).isEqualTo(20.0);
        assertThat(s.mean()).isEqualTo(10.5);
        assertThat(MetricHistory.summary(List.of(3.0)).p95()).isEqualTo(3.0);
        assertThat(MetricHistory.summary(Arrays.asList(null, null)).max()).isNull();
    }

    @Test
    void partsAreSummedPerWindowAndNaNIsUnknown() {
        MetricHistory a = MetricHistory.of(List.of(10L, 20L, 30L), List.of(0L, 0L, 2L), List.of(1.0, 2.0, Double.NaN),
                List.of(5.0, Double.NaN, 7.0), null);
        MetricHistory b = MetricHistory.of(List.of(20L, 30L), null, List.of(0.5, 4.0), null, null);
        assertThat(a.windows().get(2).cpuUsage()).isNull();
        assertThat(a.windows().get(2).revision()).isEqualTo(2);
        assertThat(a.windows().get(1).powerW()).isNull();
        assertThat(a.windows().get(0).requestRate()).isNull();
        // Window 30: a unknown, b 4.0; window 20: 2.0 + 0.5; window 10: a alone.
        assertThat(MetricHistory.summedCpu(List.of(a, b))).containsExactly(1.0, 2.5, 4.0);
        assertThat(a.between(15L, null).windows()).extracting(MetricHistory.Window::windowEndNs).containsExactly(20L, 30L);
        assertThat(MetricHistory.of(null, null, null, null, null).windows()).isEmpty();
        assertThat(MetricHistory.of(List.of("x", 10L), null, List.of(1.0, 2.0), null, null).windows())
                .extracting(MetricHistory.Window::cpuUsage).containsExactly(2.0);
    }
}
