package io.wattgraph.system;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * When each fault happens: a seeded, replayable schedule. The faults come in an order and at times
 * drawn from {@code new Random(seed)}: the span is cut in as many equal slots as faults, and each
 * fault starts at a random point of its slot that leaves room for its expected duration (for at
 * most half the slot: in a short run the faults outlast their slots and follow each other). The
 * same seed, faults and span give the same schedule. Run one at a time: a fault that lasts longer
 * than planned delays the next, never overlaps it.
 */
record FaultSchedule(long seed, List<Planned> planned) {
  /** One fault and its planned start, in ms from the start of the run. */
  record Planned(Fault fault, long atMs) {
    @Override
    public String toString() {
      return String.format("%6.1f s  %s", atMs / 1000.0, fault.name());
    }
  }

  /** What happened: planned and actual start, actual end (ms from the start), what the fault saw. */
  record Done(Planned planned, long startMs, long endMs, String observed) {
    @Override
    public String toString() {
      return String.format("%-45s planned %6.1f s, ran %6.1f-%6.1f s: %s", planned.fault().name(),
          planned.atMs() / 1000.0, startMs / 1000.0, endMs / 1000.0, observed);
    }
  }

  /** {@code faults} placed between {@code fromMs} and {@code toMs}. */
  static FaultSchedule plan(long seed, List<Fault> faults, long fromMs, long toMs) {
    if (faults.isEmpty() || toMs <= fromMs) {
      throw new IllegalArgumentException("no room for " + faults.size() + " faults in [" + fromMs + ", " + toMs + ") ms");
    }
    Random random = new Random(seed);
    List<Fault> order = new ArrayList<>(faults);
    java.util.Collections.shuffle(order, random);
    long slot = (toMs - fromMs) / order.size();
    List<Planned> planned = new ArrayList<>();
    for (int i = 0; i < order.size(); i++) {
      // A slot shorter than its fault still leaves half of it to chance (the fault then delays the next).
      long room = Math.max(1, slot - Math.min(order.get(i).expectedMs(), slot / 2));
      planned.add(new Planned(order.get(i), fromMs + i * slot + random.nextLong(room)));
    }
    return new FaultSchedule(seed, List.copyOf(planned));
  }

  /** Runs the faults in order, each not before its time (from {@code startNs}); what each did. */
  List<Done> run(long startNs) throws Exception {
    List<Done> done = new ArrayList<>();
    for (Planned p : planned) {
      long wait = p.atMs() - sinceMs(startNs);
      if (wait > 0) {
        Thread.sleep(wait);
      }
      long start = sinceMs(startNs);
      System.out.printf("soak: %.1f s: %s%n", start / 1000.0, p.fault().name());
      String observed = p.fault().inject();
      Done d = new Done(p, start, sinceMs(startNs), observed);
      System.out.println("soak: " + d);
      done.add(d);
    }
    return done;
  }

  static long sinceMs(long startNs) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNs);
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("fault schedule, seed " + seed + ":");
    planned.forEach(p -> b.append("\n  ").append(p));
    return b.toString();
  }
}
