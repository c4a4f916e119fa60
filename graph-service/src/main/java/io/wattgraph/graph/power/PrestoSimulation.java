package io.wattgraph.graph.power;

import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Closed-loop simulation of PRESTO (PowerThesis Ch. 5) on a queueing model of PowerThesis Fig. 5.4's application,
 * driven by {@link Presto#compute} every control period, for comparison with PowerThesis Table 5.2.
 *
 * <h2>Plant</h2>
 * <ul>
 *   <li>Eight pods, PowerThesis Fig. 5.4's call graph and rates (per unit of entry rate: p0 1, p1 1, p2 1,
 *       p3 0.6, p4 0.4, p5 1, p6 1, p7 0.5), pods p0-p3 on host A, p4-p7 on host B. Pod i is an M/M/c_i queue with full-speed
 *       service demand {@code D_i} ms per request; at speed s its service rate is c_i s / D_i.</li>
 *   <li>The mean latency of pod i is its own residence time R_i (Erlang C) plus, per request, v_ij (L_j + N_ij)
 *       for each callee (v_ij = edge rate / rate of i, synchronous sequential calls; N_ij a fixed network time).
 *       This is the model's truth, which PRESTO's α/β estimate only approximates.</li>
 *   <li>Power-speed curve of a host (RAPL-like): busy cores draw {@code P_core s^γ} each, plus a static
 *       {@code P_static}; with W = Σ λ_i D_i (busy cores at full speed) the host draws
 *       P(s) = P_static + P_core s^γ min(cores, W / s). A power cap C sets the highest s in [s_min, 1] with
 *       P(s) ≤ C (s_min when even that exceeds C: the cap cannot be enforced below it).</li>
 *   <li>Measurements per period T: the arrival rate is a Poisson count over T; every measured latency and
 *       rate carries the sampling noise of λT requests (coefficient of variation 1), from a seeded
 *       {@link SplittableRandom}: the run is deterministic.</li>
 * </ul>
 *
 * <h2>Controller</h2>
 * Each period the measured pod graph (cpuUsage = busy servers, threads = c_i, requestRate, latencyAvgMs,
 * serviceTimeMs = the pod's CPU time per request D_i / s, edge client latencies) and, per host, the power drawn
 * (P(k,t)), the power of the application's pods above static (P_act) and the bounds go to
 * {@link Presto#compute}; its budgets become the next caps, changed only when they differ by at least 1 W
 * from the current cap (the dead band of PowerThesis §5.4.2). The baseline is the uncapped plant (s = 1).
 */
public final class PrestoSimulation {

    /** Plant and controller parameters. */
    public record Config(double entryRate, double slaFactor, int periods, double periodSeconds, long seed,
                         double staticW, double coreW, double gamma, double minSpeed, int coresPerHost,
                         double networkMs, double deadBandW, boolean sequentialCalls) {

        public static Config defaults(double entryRate) {
            return new Config(entryRate, 1.4, 600, 2.0, 42L, 8.0, 15.0, 3.0, 0.4, 4, 0.5, 1.0, false);
        }

        public Config withSequentialCalls(boolean b) {
            return new Config(entryRate, slaFactor, periods, periodSeconds, seed, staticW, coreW, gamma, minSpeed,
                    coresPerHost, networkMs, deadBandW, b);
        }

        public Config withSlaFactor(double f) {
            return new Config(entryRate, f, periods, periodSeconds, seed, staticW, coreW, gamma, minSpeed,
                    coresPerHost, networkMs, deadBandW, sequentialCalls);
        }

        public Config withSeed(long s) {
            return new Config(entryRate, slaFactor, periods, periodSeconds, s, staticW, coreW, gamma, minSpeed,
                    coresPerHost, networkMs, deadBandW, sequentialCalls);
        }
    }

    /**
     * Steady-state figures over the second half of the run.
     *
     * @param aloneLatencyMs the uncapped plant's entry latency (model mean)
     * @param latencyMs mean entry latency under PRESTO (model mean, not the noisy measurement)
     * @param relativeError (SLA − latency) / SLA, PowerThesis Table 5.2's sign convention
     * @param powerSaving 1 − mean power / uncapped power (both hosts)
     * @param escapes periods in the whole run where PowerThesis Eq. 5.9's escape fired
     */
    public record Outcome(double entryRate, double aloneLatencyMs, double slaMs, double latencyMs,
                          double relativeError, double baselinePowerW, double powerW, double powerSaving,
                          double[] finalSpeeds, int escapes, double[] latencyTrace, double[] powerTrace) {
    }

    // PowerThesis Fig. 5.4 (as in PowerBudgetTest): rates per unit entry rate, demands in ms, servers, hosts.
    static final double[] VISITS = {1, 1, 1, 0.6, 0.4, 1, 1, 0.5};
    static final double[] DEMAND_MS = {2, 1, 1, 4, 2, 3, 5, 5};
    static final int[] SERVERS = {1, 1, 1, 1, 1, 1, 1, 1};
    static final int[] HOST = {0, 0, 0, 0, 1, 1, 1, 1};
    static final String[] HOSTS = {"A", "B"};
    /** caller, callee, calls per entry request. */
    static final double[][] CALLS = {{0, 1, 1}, {0, 2, 1}, {1, 3, 0.6}, {1, 4, 0.4}, {2, 5, 1}, {4, 6, 0.4},
            {5, 6, 0.6}, {5, 7, 0.5}};

    private final Config c;

    public PrestoSimulation(Config config) {
        this.c = config;
    }

    /** M/M/c mean residence time in ms (service + queueing); +∞ when saturated. */
    static double residenceMs(double lambdaPerS, double demandMs, int servers, double speed) {
        double mu = speed * 1000.0 / demandMs; // per server, 1/s
        double a = lambdaPerS / mu;
        double rho = a / servers;
        if (rho >= 1) {
            return Double.POSITIVE_INFINITY;
        }
        double term = 1, sum = 1;
        for (int k = 1; k < servers; k++) {
            term *= a / k;
            sum += term;
        }
        double last = term * a / servers / (1 - rho);
        double erlangC = last / (sum + last);
        return 1000.0 * (1 / mu + erlangC / (servers * mu - lambdaPerS));
    }

    /** Mean latency of every pod (own residence plus its calls), index 0 = the entry point. */
    double[] latencies(double lambda, double[] speeds, double[] residence) {
        double[] l = new double[8];
        for (int i = 7; i >= 0; i--) { // callees have higher indices in PowerThesis Fig. 5.4
            double sum = residence[i];
            for (double[] call : CALLS) {
                if ((int) call[0] == i) {
                    int j = (int) call[1];
                    sum += weight(call) * (l[j] + c.networkMs());
                }
            }
            l[i] = sum;
        }
        return l;
    }

    /**
     * How much of callee j's latency a request to i waits for: the visit ratio v_ij (sequential calls) or, in
     * the default plant, PowerThesis Eq. 5.2's α_ij, i.e. the application composes latencies as PowerThesis
     * Eq. 5.1 says.
     */
    double weight(double[] call) {
        int i = (int) call[0];
        if (c.sequentialCalls()) {
            return call[2] / VISITS[i];
        }
        double clientRate = 0;
        for (double[] other : CALLS) {
            if ((int) other[0] == i) {
                clientRate += other[2];
            }
        }
        return VISITS[i] * VISITS[(int) call[1]] / (clientRate * clientRate);
    }

    double[] residences(double lambda, double[] speeds) {
        double[] r = new double[8];
        for (int i = 0; i < 8; i++) {
            r[i] = residenceMs(lambda * VISITS[i], DEMAND_MS[i], SERVERS[i], speeds[HOST[i]]);
        }
        return r;
    }

    /** Busy cores of host k at full speed. */
    double work(int k, double lambda) {
        double w = 0;
        for (int i = 0; i < 8; i++) {
            if (HOST[i] == k) {
                w += lambda * VISITS[i] * DEMAND_MS[i] / 1000.0;
            }
        }
        return w;
    }

    double power(double work, double s) {
        return c.staticW() + c.coreW() * Math.pow(s, c.gamma()) * Math.min(c.coresPerHost(), work / s);
    }

    double maxW() {
        return c.staticW() + c.coreW() * c.coresPerHost();
    }

    /** Highest speed whose power fits under the cap (P(s) is increasing in s). */
    double speedForCap(double work, double cap) {
        if (power(work, 1) <= cap) {
            return 1;
        }
        if (power(work, c.minSpeed()) >= cap) {
            return c.minSpeed();
        }
        double lo = c.minSpeed(), hi = 1;
        for (int i = 0; i < 60; i++) {
            double mid = (lo + hi) / 2;
            if (power(work, mid) <= cap) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    public Outcome run() {
        SplittableRandom rnd = new SplittableRandom(c.seed());
        double lambda = c.entryRate();
        double[] full = {1, 1};
        double alone = latencies(lambda, full, residences(lambda, full))[0];
        double sla = c.slaFactor() * alone;
        double baseline = power(work(0, lambda), 1) + power(work(1, lambda), 1);
        double[] caps = {maxW(), maxW()};
        int n = c.periods();
        double[] latencyTrace = new double[n];
        double[] powerTrace = new double[n];
        double[] speeds = new double[2];
        int escapes = 0;
        for (int t = 0; t < n; t++) {
            // Plant: this period's arrivals (Poisson count over T), speeds under the caps, latencies, power.
            double count = poisson(rnd, lambda * c.periodSeconds());
            double rate = Math.max(1, count) / c.periodSeconds();
            double[] drawn = new double[2];
            for (int k = 0; k < 2; k++) {
                speeds[k] = speedForCap(work(k, rate), caps[k]);
                drawn[k] = power(work(k, rate), speeds[k]);
            }
            double[] residence = residences(rate, speeds);
            for (int i = 0; i < 8; i++) {
                if (Double.isInfinite(residence[i])) {
                    residence[i] = 1000.0; // saturated within the period: a long backlog, reported as 1 s
                }
            }
            double[] latency = latencies(rate, speeds, residence);
            latencyTrace[t] = latency[0];
            powerTrace[t] = drawn[0] + drawn[1];
            // Monitor: noisy measurements of the period.
            double samples = Math.max(1, count);
            List<ServiceNode> nodes = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                double served = noisy(rnd, rate * VISITS[i], samples * VISITS[i]);
                double busy = rate * VISITS[i] * DEMAND_MS[i] / 1000.0 / speeds[HOST[i]];
                Metrics m = new Metrics(noisy(rnd, busy, samples * VISITS[i]), (double) SERVERS[i], served,
                        noisy(rnd, latency[i], samples * VISITS[i]), null, null, null, null, null, null, null,
                        null, noisy(rnd, DEMAND_MS[i] / speeds[HOST[i]], samples * VISITS[i]));
                nodes.add(new ServiceNode("p" + i, "pod", "p" + i, HOSTS[HOST[i]], null, "p" + i, "app", null, null,
                        1, (double) c.coresPerHost(), m));
            }
            nodes.add(ServiceNode.external("internet"));
            List<ServiceEdge> edges = new ArrayList<>();
            edges.add(ServiceEdge.requests("internet", "p0", rate, latency[0] + c.networkMs()));
            for (double[] call : CALLS) {
                int j = (int) call[1];
                double edgeRate = noisy(rnd, rate * call[2], samples * call[2]);
                edges.add(ServiceEdge.requests("p" + (int) call[0], "p" + j, edgeRate,
                        noisy(rnd, latency[j], samples * call[2]) + c.networkMs()));
            }
            List<HostPower> hosts = new ArrayList<>();
            for (int k = 0; k < 2; k++) {
                hosts.add(new HostPower(HOSTS[k], drawn[k], drawn[k] - c.staticW(), c.staticW(), c.staticW() + 1,
                        maxW()));
            }
            // Controller: PRESTO's budgets, applied with the 1 W dead band.
            Presto.Result r = Presto.compute(new ServiceGraph(nodes, edges), "p0", sla, hosts);
            if (r.slaEscape()) {
                escapes++;
            }
            for (int k = 0; k < 2; k++) {
                double b = r.budgets().get(k).budgetW();
                if (Math.abs(b - caps[k]) >= c.deadBandW()) {
                    caps[k] = b;
                }
            }
        }
        double lat = 0, pow = 0;
        int from = n / 2;
        for (int t = from; t < n; t++) {
            lat += latencyTrace[t];
            pow += powerTrace[t];
        }
        lat /= n - from;
        pow /= n - from;
        return new Outcome(lambda, alone, sla, lat, (sla - lat) / sla, baseline, pow, 1 - pow / baseline,
                speeds.clone(), escapes, latencyTrace, powerTrace);
    }

    /** A measurement of mean {@code value} averaged over {@code samples} observations with CV 1. */
    private static double noisy(SplittableRandom rnd, double value, double samples) {
        return Math.max(0, value * (1 + gaussian(rnd) / Math.sqrt(Math.max(1, samples))));
    }

    private static double gaussian(SplittableRandom rnd) {
        double u1 = rnd.nextDouble(), u2 = rnd.nextDouble();
        return Math.sqrt(-2 * Math.log(Math.max(1e-300, u1))) * Math.cos(2 * Math.PI * u2);
    }

    private static double poisson(SplittableRandom rnd, double mean) {
        if (mean > 50) { // normal approximation
            return Math.max(0, Math.round(mean + Math.sqrt(mean) * gaussian(rnd)));
        }
        double l = Math.exp(-mean), p = 1;
        int k = 0;
        do {
            k++;
            p *= rnd.nextDouble();
        } while (p > l);
        return k - 1;
    }

    /** Three arrival rates (low, mid, high) at the default configuration, like one block of PowerThesis Table 5.2. */
    public static List<Outcome> table(long seed, boolean sequentialCalls) {
        List<Outcome> out = new ArrayList<>();
        for (double rate : new double[] {60, 80, 100}) {
            out.add(new PrestoSimulation(Config.defaults(rate).withSeed(seed).withSequentialCalls(sequentialCalls))
                    .run());
        }
        return out;
    }

    public static String format(List<Outcome> rows) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%-8s %9s %9s %9s %9s %9s %8s %9s %9s %7s%n", "lambda", "alone ms",
                "target ms", "avg ms", "delta ms", "RE", "saving", "base W", "PRESTO W", "escapes"));
        double absDelta = 0, absRe = 0, saving = 0;
        for (Outcome o : rows) {
            double delta = o.slaMs() - o.latencyMs();
            sb.append(String.format(Locale.ROOT, "%-8s %9.2f %9.2f %9.2f %9.2f %8.2f%% %7.2f%% %9.2f %9.2f %7d%n",
                    (int) o.entryRate() + "/s", o.aloneLatencyMs(), o.slaMs(), o.latencyMs(), delta,
                    100 * o.relativeError(), 100 * o.powerSaving(), o.baselinePowerW(), o.powerW(), o.escapes()));
            absDelta += Math.abs(delta);
            absRe += Math.abs(o.relativeError());
            saving += o.powerSaving();
        }
        int n = rows.size();
        sb.append(String.format(Locale.ROOT, "averages (absolute values): delta %.2f ms, RE %.2f%%, saving %.2f%% "
                + "(thesis Table 5.2: 1.50 ms, 12.49%%, 37.13%%)%n", absDelta / n, 100 * absRe / n, 100 * saving / n));
        return sb.toString();
    }

    public static void main(String[] args) {
        long seed = args.length > 0 ? Long.parseLong(args[0]) : 42L;
        System.out.println("Plant composing latencies as Eq. 5.1 with alpha (PRESTO's own model), seed " + seed);
        System.out.print(format(table(seed, false)));
        System.out.println();
        System.out.println("Plant with sequential synchronous calls (visit ratios), seed " + seed);
        System.out.print(format(table(seed, true)));
    }
}
