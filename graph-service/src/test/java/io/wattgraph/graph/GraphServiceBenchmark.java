package io.wattgraph.graph;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.wattgraph.graph.analysis.Aggregator;
import io.wattgraph.graph.analysis.CriticalPath;
import io.wattgraph.graph.analysis.DotExporter;
import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.analysis.OperationalAnalysis;
import io.wattgraph.graph.analysis.ServiceGraphService;
import io.wattgraph.graph.analysis.TrafficMatrix;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.Percentile;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import io.wattgraph.graph.model.ServiceNode;
import io.wattgraph.graph.neo4j.Neo4jReader;
import io.wattgraph.graph.placement.PlacementProblem;
import io.wattgraph.graph.placement.PlacementResult;
import io.wattgraph.graph.placement.PlacementService;
import io.wattgraph.graph.power.HostPower;
import io.wattgraph.graph.power.Hyppo;
import io.wattgraph.graph.power.Presto;
import io.wattgraph.graph.power.PrestoSimulation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/**
 * Times every analysis and placement on synthetic graphs of 100, 1,000 and 10,000 containers (not part of the
 * test suite: its name does not end in Test). Run from graph-service/ after {@code mvn -o -pl graph-service
 * test-compile}:
 * <pre>
 *   mvn -o -q dependency:build-classpath -Dmdep.outputFile=target/cp.txt -Dmdep.includeScope=test
 *   java -cp target/test-classes:target/classes:$(cat target/cp.txt) io.wattgraph.graph.GraphServiceBenchmark [--no-neo4j]
 * </pre>
 * Synthetic graph: one process per container, one container per pod, 10 pods per service, 5 namespaces,
 * 20 containers per host (4 cores, 16 GB), 3 outgoing edges per container (2 of 3 to a higher index, so mostly
 * acyclic, with requestRate, avg/p99 latencies and bytes), 5 external clients calling the first containers.
 * Each figure is the median of 5 timed runs after 2 warm-up runs (1 + 3 for placement at 1,000; one cold run
 * for placement at 10,000, only with {@code --placement-10k}). With Neo4j, also the load with both loaders
 * (row per edge vs compact) and the analysis endpoints over HTTP end to end on three instances of the service
 * (first loader; compact loader, cache off; compact loader, cache hit); {@code --rest-only} runs only that part.
 */
public final class GraphServiceBenchmark {

    static final int PER_HOST = 20;

    public static void main(String[] args) throws Exception {
        boolean neo4j = !Arrays.asList(args).contains("--no-neo4j");
        boolean placement10k = Arrays.asList(args).contains("--placement-10k");
        boolean refreshOnly = Arrays.asList(args).contains("--refresh-only");
        boolean restOnly = refreshOnly || Arrays.asList(args).contains("--rest-only");
        int[] sizes = refreshOnly ? new int[] {10_000} : new int[] {100, 1_000, 10_000};
        Map<String, Map<Integer, String>> table = new LinkedHashMap<>();
        for (int n : restOnly ? new int[0] : sizes) {
            ServiceGraph g = synthetic(n, 42);
            ServiceGraph pod = Aggregator.aggregate(g, Level.POD, Map.of());
            List<HostPower> hosts = hosts(n);
            put(table, "aggregate to pod", n, time(() -> Aggregator.aggregate(g, Level.POD, Map.of())));
            put(table, "aggregate to service", n, time(() -> Aggregator.aggregate(g, Level.SERVICE, Map.of())));
            put(table, "aggregate to host", n, time(() -> Aggregator.aggregate(g, Level.HOST, Map.of())));
            put(table, "host x host matrix", n, time(() -> TrafficMatrix.byHost(g)));
            put(table, "process-type matrix", n, time(() -> TrafficMatrix.byProcessType(g)));
            put(table, "DOT export (pod)", n, time(() -> DotExporter.toDot(pod)));
            put(table, "operational analysis (pod)", n, time(() -> OperationalAnalysis.of(pod, null)));
            put(table, "critical path widest p99", n, time(() -> CriticalPath.of(pod, Percentile.P99, "widest")));
            put(table, "critical path longest p99", n, time(() -> CriticalPath.of(pod, Percentile.P99, "longest")));
            put(table, "PRESTO budgets", n, time(() -> Presto.compute(pod, null, 50, hosts)));
            List<Hyppo.ContainerPower> cp = new ArrayList<>();
            for (ServiceNode c : pod.nodes()) {
                if (!c.external()) {
                    cp.add(new Hyppo.ContainerPower(c.hostId(), c.id(), c.metrics().powerW(), c.metrics().cpuUsage(),
                            c.metrics().cpuRequest()));
                }
            }
            put(table, "HyPPO budgets", n, time(() -> Hyppo.budgets(hosts, cp, 10)));
            PlacementProblem problem = placement(g, n);
            for (String method : List.of("local", "ga")) {
                if (n >= 10_000 && !placement10k) {
                    put(table, "placement " + method, n, "not run");
                    continue;
                }
                PlacementResult[] r = new PlacementResult[1];
                String cell = n >= 10_000 ? time(() -> r[0] = PlacementService.solve(problem, method), 0, 1)
                        : time(() -> r[0] = PlacementService.solve(problem, method), n >= 1_000 ? 1 : 2,
                                n >= 1_000 ? 3 : 5);
                put(table, "placement " + method, n, cell + String.format(Locale.ROOT, " (%.2f→%.2f MB, %d→%d nodes)",
                        r[0].crossNodeBytesBefore() / 1e6, r[0].crossNodeBytesAfter() / 1e6, r[0].nodesUsedBefore(),
                        r[0].nodesUsedAfter()));
            }
            System.err.println("done " + n);
        }
        if (neo4j) {
            neo4jLoad(table, sizes, refreshOnly);
        }
        StringBuilder sb = new StringBuilder("| operation | 100 | 1,000 | 10,000 |\n|---|---:|---:|---:|\n");
        table.forEach((op, cells) -> {
            sb.append("| ").append(op);
            for (int n : sizes) {
                sb.append(" | ").append(cells.getOrDefault(n, "–"));
            }
            sb.append(" |\n");
        });
        System.out.println(sb);
        if (restOnly) {
            System.exit(0); // the Spring contexts and Neo4j's threads would keep the JVM alive
        }
        System.out.println("PRESTO simulation, seed 42:");
        System.out.print(PrestoSimulation.format(PrestoSimulation.table(42, false)));
        System.out.print(PrestoSimulation.format(PrestoSimulation.table(42, true)));
        System.exit(0);
    }

    static void put(Map<String, Map<Integer, String>> table, String op, int n, String cell) {
        table.computeIfAbsent(op, k -> new LinkedHashMap<>()).put(n, cell);
    }

    static String time(Supplier<?> work) {
        return time(work, 2, 5);
    }

    static String time(Supplier<?> work, int warmup, int runs) {
        for (int i = 0; i < warmup; i++) {
            work.get();
        }
        long[] t = new long[runs];
        for (int i = 0; i < runs; i++) {
            long s = System.nanoTime();
            work.get();
            t[i] = System.nanoTime() - s;
        }
        Arrays.sort(t);
        double ms = t[runs / 2] / 1e6;
        return ms >= 1000 ? String.format(Locale.ROOT, "%.2f s", ms / 1000) : String.format(Locale.ROOT, "%.1f ms", ms);
    }

    static String host(int i) {
        return "h" + (i / PER_HOST);
    }

    static ServiceGraph synthetic(int n, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<ServiceNode> nodes = new ArrayList<>();
        String[] types = {"nginx", "java", "postgres", "redis", "python", "node", "envoy", "memcached"};
        for (int i = 0; i < n; i++) {
            double cpu = 0.05 + rnd.nextDouble() * 0.5;
            Metrics m = new Metrics(cpu, 1.0 + rnd.nextInt(4), 10 + rnd.nextDouble() * 200, 1 + rnd.nextDouble() * 20,
                    null, null, null, 5 + rnd.nextDouble() * 50, 1 + cpu * 10, 1e8 + rnd.nextDouble() * 4e8,
                    0.1 + rnd.nextDouble() * 0.4, 2e8, null);
            String id = host(i) + "/" + (1000 + i) + "/1";
            nodes.add(ServiceNode.process(id, types[i % types.length], host(i), "c" + i, types[i % types.length], 4.0, m)
                    .withKubernetes("pod-" + i, "ns" + (i % 5), "svc-" + (i / 10)));
        }
        List<ServiceEdge> edges = new ArrayList<>();
        Map<String, Boolean> seen = new HashMap<>();
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++) {
                int j = k < 2 && i < n - 1 ? i + 1 + rnd.nextInt(Math.min(50, n - i - 1)) : rnd.nextInt(n);
                if (j == i || seen.put(i + ">" + j, true) != null) {
                    continue;
                }
                double lat = 1 + rnd.nextDouble() * 20;
                edges.add(new ServiceEdge(nodes.get(i).id(), nodes.get(j).id(), 1000 + rnd.nextInt(1_000_000),
                        1000 + rnd.nextInt(5_000_000), 1 + rnd.nextInt(10), 0L, 1L, 5 + rnd.nextDouble() * 100, lat,
                        null, null, null, lat * 3));
            }
        }
        for (int e = 0; e < 5; e++) {
            String ext = "198.51.100." + e;
            nodes.add(ServiceNode.external(ext));
            edges.add(new ServiceEdge(ext, nodes.get(e).id(), 5000, 500_000, 10, 0L, 1L, 100.0, 30.0, null, null,
                    null, 90.0));
        }
        return new ServiceGraph(nodes, edges);
    }

    /** The synthetic graph's processes as Cypher parameter rows (id, host, ctr, pod, ns, svc, cpu, rate, lat, power). */
    static List<Map<String, Object>> processRows(ServiceGraph g) {
        List<Map<String, Object>> procs = new ArrayList<>();
        for (ServiceNode p : g.nodes()) {
            if (!p.external()) {
                Map<String, Object> m = new HashMap<>();
                m.put("id", p.id());
                m.put("host", p.hostId());
                m.put("ctr", p.containerId());
                m.put("pod", p.pod());
                m.put("ns", p.namespace());
                m.put("svc", p.service());
                m.put("cpu", p.metrics().cpuUsage());
                m.put("rate", p.metrics().requestRate());
                m.put("lat", p.metrics().latencyAvgMs());
                m.put("power", p.metrics().powerW());
                procs.add(m);
            }
        }
        return procs;
    }

    static List<HostPower> hosts(int n) {
        List<HostPower> hosts = new ArrayList<>();
        for (int h = 0; h * PER_HOST < n; h++) {
            hosts.add(new HostPower("h" + h, 80.0, 40.0, 30.0, 40, 150));
        }
        return hosts;
    }

    static PlacementProblem placement(ServiceGraph g, int n) {
        List<PlacementProblem.Workload> w = new ArrayList<>();
        for (ServiceNode p : g.nodes()) {
            if (!p.external()) {
                w.add(new PlacementProblem.Workload(p.id(), p.metrics().cpuRequest(), p.metrics().memoryRequestBytes(),
                        p.hostId()));
            }
        }
        List<PlacementProblem.NodeCapacity> nodes = new ArrayList<>();
        for (int h = 0; h * PER_HOST < n; h++) {
            nodes.add(new PlacementProblem.NodeCapacity("h" + h, 16.0, 16e9)); // 20 x <=0.5 cores fit in 16
        }
        List<PlacementProblem.Traffic> t = new ArrayList<>();
        Map<String, ServiceNode> byId = g.nodesById();
        for (ServiceEdge e : g.edges()) {
            if (!byId.get(e.source()).external()) {
                t.add(new PlacementProblem.Traffic(e.source(), e.target(), e.bytes()));
            }
        }
        return new PlacementProblem(w, nodes, t, null);
    }

    /** The REST calls timed end to end (HTTP GET → whole JSON body received), as the page makes them. */
    static final String[][] REST = {
            {"operational analysis (pod)", "/api/v1/analysis/operational"},
            {"critical path widest p99 (pod)", "/api/v1/analysis/critical-path?mode=widest&percentile=p99"},
            {"critical path longest p99 (pod)", "/api/v1/analysis/critical-path?mode=longest&percentile=p99"},
            {"host x host projection", "/api/v1/projections/host"},
            {"process-type projection", "/api/v1/projections/process-type"},
            {"service graph (pod)", "/api/v1/service-graph?level=pod"}};

    /**
     * The service on a random port over the benchmark's Neo4j: {@code rowPerEdge} swaps in the first loader
     * (ServiceGraphLoader#loadRowPerEdge) as the primary bean, {@code cacheTtl} is wattgraph.graph.cache-ttl.
     */
    static final class App {
        final String name;
        final org.springframework.context.ConfigurableApplicationContext context;
        final java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        final String base;

        App(String name, String boltUri, boolean rowPerEdge, String cacheTtl) {
            this(name, boltUri, rowPerEdge, cacheTtl, "0s");
        }

        App(String name, String boltUri, boolean rowPerEdge, String cacheTtl, String refreshAfter) {
            this.name = name;
            org.springframework.boot.builder.SpringApplicationBuilder b =
                    new org.springframework.boot.builder.SpringApplicationBuilder(GraphServiceApplication.class)
                            .properties("spring.main.banner-mode=off");
            if (rowPerEdge) {
                b.initializers(ctx -> ((org.springframework.context.support.GenericApplicationContext) ctx)
                        .registerBean("rowPerEdgeLoader", ServiceGraphLoader.class,
                                () -> new ServiceGraphLoader(ctx.getBean(Neo4jReader.class)) {
                                    @Override
                                    public Loaded load(GraphFilter filter) {
                                        return loadRowPerEdge(filter);
                                    }
                                }, bd -> bd.setPrimary(true)));
            }
            // Command-line arguments: they win over application.properties (server.port=8080).
            context = b.run("--server.port=0", "--wattgraph.neo4j.uri=" + boltUri,
                    "--wattgraph.graph.cache-ttl=" + cacheTtl, "--wattgraph.graph.refresh-after=" + refreshAfter,
                    "--logging.level.root=WARN");
            base = "http://127.0.0.1:" + context.getEnvironment().getProperty("local.server.port");
        }

        void invalidate() {
            context.getBean(ServiceGraphService.class).invalidate();
        }

        String get(String path) {
            return send(path).body();
        }

        java.net.http.HttpResponse<String> send(String path) {
            try {
                java.net.http.HttpResponse<String> r = http.send(java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create(base + path)).GET().build(), java.net.http.HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() != 200) {
                    throw new IllegalStateException(path + ": " + r.statusCode() + " " + r.body());
                }
                return r;
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /**
     * The default configuration (cache-ttl 5 s, background refresh after 2 s) with requests 5.5 s apart, longer
     * than the TTL: without the refresher each of them would read Neo4j. Median of 5 after 1, and the largest
     * X-Wattgraph-Graph-Age-Ms seen.
     */
    static void spacedRequests(Map<String, Map<Integer, String>> table, App app, int n) {
        for (String[] endpoint : REST) {
            app.get(endpoint[1]);
            long[] t = new long[5];
            long maxAge = 0;
            for (int i = 0; i < t.length; i++) {
                try {
                    Thread.sleep(5500);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                long s = System.nanoTime();
                java.net.http.HttpResponse<String> r = app.send(endpoint[1]);
                t[i] = System.nanoTime() - s;
                maxAge = Math.max(maxAge, Long.parseLong(r.headers().firstValue(ServiceGraphService.AGE_HEADER)
                        .orElseThrow()));
            }
            Arrays.sort(t);
            put(table, "REST " + endpoint[0] + ", defaults (5 s TTL + refresh after 2 s), requests 5.5 s apart", n,
                    String.format(Locale.ROOT, "%.1f ms (max age %d ms)", t[2] / 1e6, maxAge));
        }
    }

    /**
     * Where the load's time goes at one size: each query alone, in its own read transaction, records listed (and
     * for the edges, the Neo4j-side cost alone with {@code count(*)}, and the driver's default fetch size).
     */
    static void profileQueries(Map<String, Map<Integer, String>> table, Driver driver, int n) {
        Map<String, Object> noFilter = new HashMap<>();
        noFilter.put("host", null);
        noFilter.put("fromNs", null);
        noFilter.put("toNs", null);
        org.neo4j.driver.SessionConfig all = org.neo4j.driver.SessionConfig.builder().withFetchSize(-1).build();
        org.neo4j.driver.SessionConfig paged = org.neo4j.driver.SessionConfig.defaultConfig();
        String edgesCount = ServiceGraphLoader.EDGES_COMPACT.substring(0,
                ServiceGraphLoader.EDGES_COMPACT.indexOf("RETURN")) + "RETURN count(*)";
        Object[][] queries = {
                {"profile: edges, count(*) only (Neo4j side)", edgesCount, all},
                {"profile: edges, compact rows, fetch all", ServiceGraphLoader.EDGES_COMPACT, all},
                {"profile: edges, compact rows, fetch 1000/batch", ServiceGraphLoader.EDGES_COMPACT, paged},
                {"profile: edges, whole nodes per row (before), fetch all", ServiceGraphLoader.EDGES, all},
                {"profile: edges, whole nodes per row (before), fetch 1000/batch", ServiceGraphLoader.EDGES, paged},
                {"profile: processes, compact", ServiceGraphLoader.PROCESSES_COMPACT, all},
                {"profile: containers, compact", ServiceGraphLoader.CONTAINERS_COMPACT, all},
                {"profile: hosts, compact", ServiceGraphLoader.HOSTS_COMPACT, all}};
        for (Object[] q : queries) {
            int[] rows = new int[1];
            String cell = time(() -> {
                try (Session s = driver.session((org.neo4j.driver.SessionConfig) q[2])) {
                    rows[0] = s.executeRead(tx -> tx.run((String) q[1], noFilter).list().size());
                    return rows[0];
                }
            }, 2, 5);
            put(table, (String) q[0], n, cell + " (" + rows[0] + " rows)");
        }
    }

    /** Writes each synthetic graph into an in-process Neo4j and times ServiceGraphLoader.load (all, unfiltered). */
    static void neo4jLoad(Map<String, Map<Integer, String>> table, int[] sizes, boolean refreshOnly) throws Exception {
        Path dir = Files.createDirectories(Path.of("target", "bench-neo4j"));
        try (Neo4j db = Neo4jBuilders.newInProcessBuilder(dir).withDisabledServer()
                .withConfig(GraphDatabaseSettings.preallocate_logical_logs, false).build();
             Driver driver = GraphDatabase.driver(db.boltURI(), AuthTokens.none())) {
            ServiceGraphLoader loader = new ServiceGraphLoader(new Neo4jReader(driver, new SimpleMeterRegistry()));
            List<App> apps = refreshOnly ? List.of(new App("after", db.boltURI().toString(), false, "0s"))
                    : List.of(new App("before", db.boltURI().toString(), true, "0s"),
                    new App("after", db.boltURI().toString(), false, "0s"),
                    new App("after, cache hit", db.boltURI().toString(), false, "30s"));
            // The defaults: cache-ttl 5s, background refresh of used filters after 2s.
            App refreshing = new App("refresh", db.boltURI().toString(), false, "5s", "2s");
            for (int n : sizes) {
                ServiceGraph g = synthetic(n, 42);
                try (Session s = driver.session()) {
                    s.run("MATCH (x) DETACH DELETE x").consume();
                    write(s, g);
                }
                apps.forEach(App::invalidate);
                int[] size = new int[2];
                String cell = time(() -> {
                    ServiceGraphLoader.Loaded l = loader.loadRowPerEdge(GraphFilter.NONE);
                    size[0] = l.graph().nodes().size();
                    size[1] = l.graph().edges().size();
                    return l;
                }, 2, 5);
                put(table, "load from Neo4j, row per edge (before)", n, cell + " (" + size[0] + " nodes, " + size[1]
                        + " edges)");
                put(table, "load from Neo4j, compact (after)", n, time(() -> loader.load(GraphFilter.NONE), 2, 5)
                        + (loader.load(GraphFilter.NONE).equals(loader.loadRowPerEdge(GraphFilter.NONE))
                        ? " (same graph)" : " (DIFFERENT GRAPH)"));
                if (n == 10_000 && !refreshOnly) {
                    profileQueries(table, driver, n);
                }
                for (App app : apps) {
                    for (String[] endpoint : REST) {
                        put(table, "REST " + endpoint[0] + ", " + app.name, n, time(() -> app.get(endpoint[1]), 2, 5));
                    }
                }
                if (n == 10_000) {
                    spacedRequests(table, refreshing, n);
                }
                System.err.println("neo4j done " + n);
            }
            apps.forEach(a -> a.context.close());
            refreshing.context.close();
        }
    }

    /**
     * Writes synthetic graph {@code g} into an empty Neo4j as the stream job would: Host, Container, Process and
     * External nodes, RUNS_ON, IN_CONTAINER and TALKS_TO with traffic and latencies (every edge seen at 0-1 ns).
     */
    static void write(Session s, ServiceGraph g) {
        List<Map<String, Object>> procs = processRows(g);
        s.run("CREATE INDEX host_id IF NOT EXISTS FOR (h:Host) ON (h.id)").consume();
        s.run("CREATE INDEX proc_id IF NOT EXISTS FOR (p:Process) ON (p.id)").consume();
        s.run("CREATE INDEX ctr_id IF NOT EXISTS FOR (c:Container) ON (c.id)").consume();
        s.run("CREATE INDEX ext_id IF NOT EXISTS FOR (e:External) ON (e.id)").consume();
        s.run("UNWIND $rows AS r MERGE (h:Host {id: r.host}) SET h.cores = 4", Map.of("rows", procs))
                .consume();
        s.run("""
                UNWIND $rows AS r MATCH (h:Host {id: r.host})
                CREATE (c:Container {id: r.ctr, hostId: r.host, pod: r.pod, namespace: r.ns, service: r.svc})
                       -[:RUNS_ON]->(h)
                CREATE (p:Process {id: r.id, hostId: r.host, pid: 1, startTimeNs: 1, comm: 'java',
                       cmdline: 'java -jar app.jar', containerId: r.ctr, cpuUsage: r.cpu,
                       requestRate: r.rate, powerW: r.power, utilization: r.cpu,
                       serverTimeMeanNs: r.lat * 1e6, serverTimeP50Ns: r.lat * 0.8e6,
                       serverTimeP75Ns: r.lat * 1.2e6, serverTimeP90Ns: r.lat * 2e6,
                       serverTimeP99Ns: r.lat * 4e6})-[:RUNS_ON]->(h)
                CREATE (p)-[:IN_CONTAINER]->(c)
                """, Map.of("rows", procs)).consume();
        List<Map<String, Object>> rels = new ArrayList<>();
        for (ServiceEdge e : g.edges()) {
            Map<String, Object> m = new HashMap<>();
            m.put("s", e.source());
            m.put("t", e.target());
            m.put("c2s", e.bytesClientToServer());
            m.put("s2c", e.bytesServerToClient());
            m.put("rate", e.requestRate());
            m.put("p99", e.latencyP99Ms());
            rels.add(m);
        }
        s.run("UNWIND $rows AS r WITH r WHERE r.s STARTS WITH '198.' "
                + "MERGE (:External {id: r.s, address: r.s})", Map.of("rows", rels)).consume();
        s.run("""
                UNWIND $rows AS r
                MATCH (a {id: r.s}) WHERE a:Process OR a:External
                MATCH (b:Process {id: r.t})
                CREATE (a)-[:TALKS_TO {bytesClientToServer: r.c2s, bytesServerToClient: r.s2c,
                       connections: 1, firstSeenNs: 0, lastSeenNs: 1, requestRate: r.rate,
                       clientRttMeanNs: r.p99 * 0.3e6, clientRttP50Ns: r.p99 * 0.25e6,
                       clientRttP75Ns: r.p99 * 0.4e6, clientRttP90Ns: r.p99 * 0.6e6,
                       clientRttP99Ns: r.p99 * 1e6, serverTimeMeanNs: r.p99 * 0.2e6,
                       serverTimeP50Ns: r.p99 * 0.15e6, serverTimeP75Ns: r.p99 * 0.3e6,
                       serverTimeP90Ns: r.p99 * 0.45e6, serverTimeP99Ns: r.p99 * 0.8e6,
                       networkTimeMeanNs: r.p99 * 0.1e6}]->(b)
                """, Map.of("rows", rels)).consume();
    }
}
