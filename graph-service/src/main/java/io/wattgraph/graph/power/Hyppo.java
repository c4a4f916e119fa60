package io.wattgraph.graph.power;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * HyPPO's CPU-request driven budget (PowerThesis Ch. 4): for node n,
 * {@code power_n = P_idle + Σ_c (power_{n,c} + i(c))} (PowerThesis Eq. 4.1) with
 * {@code i(c) = (cpu_usage_c - cpu_request_c) * P} when the container has a usage (and a request; without a
 * request the contribution is 0, as PowerThesis states) and 0 otherwise (PowerThesis Eq. 4.2). P is in watts per core.
 * The result is clamped to the host's [min, max].
 */
public final class Hyppo {

    /** A container's measured power (W), CPU usage and request (cores); usage and request may be unknown. */
    public record ContainerPower(String host, String container, double powerW, Double cpuUsage, Double cpuRequest) {
    }

    private Hyppo() {
    }

    public static List<Budget> budgets(List<HostPower> hosts, List<ContainerPower> containers,
                                       double proportionalWattsPerCore) {
        List<Budget> budgets = new ArrayList<>();
        Map<String, List<ContainerPower>> byHost = new java.util.HashMap<>();
        for (ContainerPower c : containers) {
            byHost.computeIfAbsent(c.host(), k -> new ArrayList<>()).add(c);
        }
        for (HostPower h : hosts) {
            double idle = h.idlePowerW() == null ? 0 : h.idlePowerW();
            double consumed = 0;
            double contribution = 0;
            int count = 0;
            for (ContainerPower c : byHost.getOrDefault(h.host(), List.of())) {
                count++;
                consumed += c.powerW();
                contribution += contribution(c, proportionalWattsPerCore);
            }
            double raw = idle + consumed + contribution;
            double budget = clamp(raw, h);
            Map<String, Double> terms = new LinkedHashMap<>();
            terms.put("idleW", idle);
            terms.put("containersW", consumed);
            terms.put("proportionalW", contribution);
            terms.put("unclampedW", raw);
            String reason = String.format(Locale.ROOT,
                    "Eq. 4.1: idle %.2f W + %d containers %.2f W %s proportional %.2f W = %.2f W", idle, count,
                    consumed, contribution >= 0 ? "+" : "-", Math.abs(contribution), raw)
                    + clampReason(raw, budget, h);
            budgets.add(new Budget(h.host(), "hyppo", h.currentPowerW(), budget, reason, terms));
        }
        return budgets;
    }

    /** PowerThesis Eq. 4.2. */
    public static double contribution(ContainerPower c, double p) {
        if (c.cpuUsage() == null || c.cpuRequest() == null) {
            return 0;
        }
        return (c.cpuUsage() - c.cpuRequest()) * p;
    }

    static double clamp(double value, HostPower h) {
        return Math.max(h.minW(), Math.min(h.maxW(), value));
    }

    static String clampReason(double raw, double budget, HostPower h) {
        if (budget > raw) {
            return String.format(Locale.ROOT, "; raised to the host minimum %.2f W", h.minW());
        }
        if (budget < raw) {
            return String.format(Locale.ROOT, "; capped at the host maximum %.2f W", h.maxW());
        }
        return "";
    }
}
