package io.wattgraph.graph.power;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Behaviour of the PRESTO closed loop on the PowerThesis Fig. 5.4 queueing model (no timings asserted). */
class PrestoSimulationTest {

    @Test
    void deterministicForASeed() {
        PrestoSimulation.Outcome a = new PrestoSimulation(PrestoSimulation.Config.defaults(80)).run();
        PrestoSimulation.Outcome b = new PrestoSimulation(PrestoSimulation.Config.defaults(80)).run();
        assertThat(a.latencyTrace()).containsExactly(b.latencyTrace());
        assertThat(a.powerTrace()).containsExactly(b.powerTrace());
        PrestoSimulation.Outcome other = new PrestoSimulation(PrestoSimulation.Config.defaults(80).withSeed(7)).run();
        assertThat(other.latencyTrace()).isNotEqualTo(a.latencyTrace());
    }

    @Test
    void latencySettlesNearTheSlaWithLessPowerThanUncapped() {
        List<PrestoSimulation.Outcome> rows = PrestoSimulation.table(42, false);
        assertThat(rows).hasSize(3);
        for (PrestoSimulation.Outcome o : rows) {
            // The controller uses the slack: slower than uncapped, within a band of the SLA, rarely escaping.
            assertThat(o.latencyMs()).as("latency at %s/s", o.entryRate()).isGreaterThan(o.aloneLatencyMs());
            assertThat(Math.abs(o.relativeError())).as("relative error at %s/s", o.entryRate()).isLessThan(0.25);
            assertThat(o.powerW()).isLessThan(o.baselinePowerW());
            assertThat(o.powerSaving()).isGreaterThan(0.05);
            assertThat(o.escapes()).isLessThan(o.latencyTrace().length / 20);
            for (double s : o.finalSpeeds()) {
                assertThat(s).isBetween(0.4, 1.0);
            }
        }
        // The first period runs uncapped; the second half is on average below that power.
        PrestoSimulation.Outcome mid = rows.get(1);
        assertThat(mid.powerTrace()[0]).isGreaterThan(mid.powerW());
    }

    @Test
    void escapeBoundsTheLatencyWhenTheSlaIsBelowWhatTheHostsCanDo() {
        // An SLA under the uncapped latency: every period escapes to the host maximum (PowerThesis Eq. 5.9) or raises
        // power.
        PrestoSimulation.Outcome o = new PrestoSimulation(PrestoSimulation.Config.defaults(80).withSlaFactor(0.4))
                .run();
        assertThat(o.powerSaving()).isLessThan(0.01);
        assertThat(o.finalSpeeds()).containsExactly(1.0, 1.0);
    }
}
