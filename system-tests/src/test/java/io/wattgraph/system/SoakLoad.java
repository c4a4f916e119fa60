package io.wattgraph.system;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The soak's mixed load on three namespace hosts of an {@link OutageStack}, in two threads, until
 * {@link #stopAt}; every load bounded in connections and time, each counted by its own processes
 * (the ground truth):
 * <ul>
 *   <li>rounds of {@code roundS} seconds, each: short connections host-a → host-b at
 *       {@code shortPerSecond}, and long HTTP/1.1 keep-alive connections host-b → host-a (each
 *       {@link #KEEP_ALIVE} requests, about a second);
 *   <li>pod churn host-c → host-b: one after the other, a client and a server started each in a
 *       cgroup of its own ({@link ProcessCgroup}), short connections for {@code roundS / 2}
 *       seconds, then stopped and their cgroups removed. Host-c's traffic is only this, and holds
 *       while {@link #quiet} is taken (its agent is being killed).
 * </ul>
 */
final class SoakLoad implements AutoCloseable {
  static final ConnectionLoad.Shape KEEP_ALIVE = new ConnectionLoad.Shape(20, 50, true);
  static final int A = 0;
  static final int B = 1;
  static final int C = 2;
  /** Pods' connections per second. */
  static final long POD_PER_SECOND = 50;

  /** Held by a fault that must see no traffic of host-c. */
  final Lock quiet = new ReentrantLock();
  private final OutageStack stack;
  private final long roundS;
  private final long shortPerSecond;
  private final List<OutageStack.Ran> ran = Collections.synchronizedList(new ArrayList<>());
  private final List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
  private final AtomicInteger port = new AtomicInteger(20_000);
  private final AtomicInteger pods = new AtomicInteger();
  private final List<Thread> threads = new ArrayList<>();
  private volatile long stopNs = Long.MAX_VALUE;

  SoakLoad(OutageStack stack, long roundS, long shortPerSecond) {
    this.stack = stack;
    this.roundS = roundS;
    this.shortPerSecond = shortPerSecond;
  }

  /** Starts both drivers; {@code maxNs} bounds them whatever {@link #stopAt} says. */
  void start(long maxNs) {
    stopNs = maxNs;
    threads.add(new Thread(() -> drive(this::round), "soak-rounds"));
    threads.add(new Thread(() -> drive(this::pod), "soak-pods"));
    threads.forEach(Thread::start);
  }

  /** No load starts after {@code ns} (System.nanoTime); the running ones finish. */
  void stopAt(long ns) {
    stopNs = Math.min(stopNs, ns);
  }

  private interface Step {
    void run() throws Exception;
  }

  private void drive(Step step) {
    try {
      while (System.nanoTime() < stopNs && failures.isEmpty()) {
        step.run();
      }
    } catch (Throwable t) {
      failures.add(t);
    }
  }

  private void round() throws Exception {
    int n = port.getAndAdd(2);
    long keepAliveConnections = Math.max(1, roundS * 1000 / (KEEP_ALIVE.exchanges() * KEEP_ALIVE.gapMs()));
    ConnectionLoad shortLoad = stack.load("short-" + n, A, B, n, roundS * shortPerSecond, shortPerSecond);
    // One after the other, about a second each.
    ConnectionLoad keepAlive = stack.load("keepalive-" + n, B, A, n + 1, keepAliveConnections, 1, KEEP_ALIVE, List.of());
    ran.add(new OutageStack.Ran("short " + n + " a->b", shortLoad, shortLoad.finish()));
    ran.add(new OutageStack.Ran("keep-alive " + (n + 1) + " b->a", keepAlive, keepAlive.finish()));
  }

  private void pod() throws Exception {
    quiet.lock();
    try {
      if (System.nanoTime() < stopNs) {
        runPod(roundS / 2);
      }
    } finally {
      quiet.unlock();
    }
    // Lets a fault waiting for host-c to be quiet in.
    Thread.sleep(100);
  }

  /** One pod, host-c → host-b, for {@code seconds}; its counts among the ground truth. */
  Object runPod(long seconds) throws Exception {
    int n = port.getAndIncrement();
    String name = "pod-" + pods.incrementAndGet();
    try (ProcessCgroup cgroup = new ProcessCgroup("soak-" + name)) {
      ConnectionLoad pod = stack.load(name, C, B, n, seconds * POD_PER_SECOND, POD_PER_SECOND, ConnectionLoad.SHORT,
          cgroup.wrapper());
      ran.add(new OutageStack.Ran(name + " c->b", pod, pod.finish()));
    }
    return name;
  }

  /** Waits for both drivers (at most {@code timeoutS} after {@link #stopAt}); every load that ran. */
  List<OutageStack.Ran> finish(long timeoutS) throws Exception {
    for (Thread t : threads) {
      long left = stopNs + TimeUnit.SECONDS.toNanos(timeoutS) - System.nanoTime();
      t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
      if (t.isAlive()) {
        throw new AssertionError(t.getName() + " still running " + timeoutS + " s after the end of the load");
      }
    }
    if (!failures.isEmpty()) {
      AssertionError e = new AssertionError("a load failed: " + failures.get(0), failures.get(0));
      failures.stream().skip(1).forEach(e::addSuppressed);
      throw e;
    }
    return List.copyOf(ran);
  }

  /** Stops the drivers (their load processes are the stack's, killed at its teardown). */
  @Override
  public void close() throws InterruptedException {
    stopNs = 0;
    for (Thread t : threads) {
      t.interrupt();
      t.join(TimeUnit.SECONDS.toMillis(30));
    }
  }
}
