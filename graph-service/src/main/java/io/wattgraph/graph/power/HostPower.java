package io.wattgraph.graph.power;

/**
 * One host's power state and bounds for a budget period.
 *
 * @param host host id
 * @param currentPowerW P(k, t): the host's current (core) power; PowerThesis Eq. 5.8 (PRESTO) starts from it
 * @param actionablePowerW P_act(k, t): the power of the pods the controller may act on (PowerThesis Eq. 5.8)
 * @param idlePowerW P_idle of PowerThesis Eq. 4.1 (HyPPO)
 * @param minW lowest budget ever published for the host
 * @param maxW highest budget, P_max(k) of PowerThesis Eq. 5.9
 */
public record HostPower(String host, Double currentPowerW, Double actionablePowerW, Double idlePowerW, double minW,
                        double maxW) {
}
