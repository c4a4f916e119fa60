package io.wattgraph.graph.placement;

import java.util.Random;

/**
 * The baseline of BlackBox §7.4 (their Pyevolve optimiser): the genome is one integer per workload, the node it
 * runs on; the fitness is the product of three factors, CPU, memory and traffic. For CPU and memory, every
 * used node is penalised for being under-used (1 - utilisation) and, more heavily, for being over-used; the
 * traffic factor falls with the cross-node bytes. Tournament selection, single-point crossover (Pyevolve's
 * default for a list genome), per-gene mutation, elitism. Seeded, so results are reproducible. The answer is
 * the best feasible genome seen (by the true objective); the GA can end without one on tight instances.
 */
final class GeneticSolver {

    static final double UNDER_PENALTY = 0.5;
    static final double OVER_PENALTY = 10.0;

    private final Instance in;
    private final Random random;
    private final int population;
    private final int generations;
    private final double mutationRate;

    GeneticSolver(Instance in, long seed) {
        this.in = in;
        this.random = new Random(seed);
        this.population = 80;
        this.generations = in.n <= 50 ? 400 : in.n <= 500 ? 150 : 60;
        this.mutationRate = Math.max(0.02, 1.0 / Math.max(1, in.n));
    }

    int[] solve(int[] seedGenome) {
        int[][] pop = new int[population][];
        for (int p = 0; p < population; p++) {
            pop[p] = p == 0 && seedGenome != null ? seedGenome.clone() : randomGenome();
        }
        double[] fit = new double[population];
        int[] bestFeasible = null;
        double bestFeasibleCost = Double.POSITIVE_INFINITY;
        for (int g = 0; g <= generations; g++) {
            int elite = 0;
            for (int p = 0; p < population; p++) {
                fit[p] = fitness(pop[p]);
                if (fit[p] > fit[elite]) {
                    elite = p;
                }
                if (in.feasible(pop[p])) {
                    double c = in.cost(pop[p]);
                    if (c < bestFeasibleCost) {
                        bestFeasibleCost = c;
                        bestFeasible = pop[p].clone();
                    }
                }
            }
            if (g == generations) {
                break;
            }
            int[][] next = new int[population][];
            next[0] = pop[elite].clone();
            for (int p = 1; p < population; p++) {
                int[] a = pop[tournament(fit)];
                int[] b = pop[tournament(fit)];
                int cut = in.n <= 1 ? 0 : 1 + random.nextInt(in.n - 1);
                int[] child = new int[in.n];
                for (int i = 0; i < in.n; i++) {
                    child[i] = i < cut ? a[i] : b[i];
                    if (random.nextDouble() < mutationRate) {
                        child[i] = random.nextInt(in.k);
                    }
                }
                next[p] = child;
            }
            pop = next;
        }
        return bestFeasible;
    }

    private int tournament(double[] fit) {
        int a = random.nextInt(fit.length);
        int b = random.nextInt(fit.length);
        return fit[a] >= fit[b] ? a : b;
    }

    private int[] randomGenome() {
        int[] g = new int[in.n];
        for (int i = 0; i < in.n; i++) {
            g[i] = random.nextInt(in.k);
        }
        return g;
    }

    double fitness(int[] a) {
        double[] c = new double[in.k];
        double[] m = new double[in.k];
        boolean[] used = new boolean[in.k];
        for (int i = 0; i < in.n; i++) {
            c[a[i]] += in.cpu[i];
            m[a[i]] += in.mem[i];
            used[a[i]] = true;
        }
        double cpuPenalty = 0;
        double memPenalty = 0;
        for (int j = 0; j < in.k; j++) {
            if (used[j]) {
                cpuPenalty += penalty(in.capCpu[j] <= 0 ? 1 : c[j] / in.capCpu[j]);
                memPenalty += penalty(in.capMem[j] <= 0 ? 1 : m[j] / in.capMem[j]);
            }
        }
        double traffic = in.totalBytes <= 0 ? 0 : in.crossBytes(a) / in.totalBytes;
        return 1 / (1 + cpuPenalty) * 1 / (1 + memPenalty) * 1 / (1 + traffic);
    }

    private static double penalty(double utilisation) {
        return utilisation <= 1 ? UNDER_PENALTY * (1 - utilisation) : OVER_PENALTY * (utilisation - 1);
    }
}
