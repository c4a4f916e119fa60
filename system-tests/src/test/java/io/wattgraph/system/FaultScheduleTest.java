package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The soak's schedule: replayable from its seed, every fault once, in its own slot. */
class FaultScheduleTest {
  private final List<String> injected = new ArrayList<>();

  private List<Fault> faults() {
    return faults(5_000);
  }

  private List<Fault> faults(long expectedMs) {
    List<Fault> f = new ArrayList<>();
    for (String name : List.of("broker", "block", "tm", "jm", "neo4j", "agent")) {
      f.add(new Fault.Of(name, expectedMs, () -> {
        injected.add(name);
        return name;
      }));
    }
    return f;
  }

  private static List<String> shape(FaultSchedule s) {
    return s.planned().stream().map(p -> p.fault().name() + "@" + p.atMs()).toList();
  }

  @Test
  void theSameSeedGivesTheSameScheduleAnotherSeedAnother() {
    assertEquals(shape(FaultSchedule.plan(42, faults(), 20_000, 160_000)), shape(FaultSchedule.plan(42, faults(), 20_000, 160_000)));
    assertNotEquals(shape(FaultSchedule.plan(42, faults(), 20_000, 160_000)), shape(FaultSchedule.plan(43, faults(), 20_000, 160_000)));
  }

  @Test
  void everyFaultOnceInOrderInsideItsSlot() {
    for (long seed = 0; seed < 200; seed++) {
      FaultSchedule s = FaultSchedule.plan(seed, faults(), 20_000, 3_600_000);
      assertEquals(List.of("agent", "block", "broker", "jm", "neo4j", "tm"),
          s.planned().stream().map(p -> p.fault().name()).sorted().toList());
      long slot = (3_600_000 - 20_000) / 6;
      for (int i = 0; i < 6; i++) {
        long at = s.planned().get(i).atMs();
        assertTrue(at >= 20_000 + i * slot && at + 5_000 <= 20_000 + (i + 1) * slot, "seed " + seed + ": " + s);
      }
    }
  }

  @Test
  void faultsLongerThanTheirSlotsStillStartAtRandomPointsOfItsFirstHalf() {
    // The 3-minute soak: slots of 23 s, faults of 30-70 s.
    List<Long> firstStarts = new ArrayList<>();
    for (long seed = 0; seed < 50; seed++) {
      FaultSchedule s = FaultSchedule.plan(seed, faults(60_000), 20_000, 160_000);
      long slot = (160_000 - 20_000) / 6;
      for (int i = 0; i < 6; i++) {
        long at = s.planned().get(i).atMs();
        assertTrue(at >= 20_000 + i * slot && at < 20_000 + i * slot + slot / 2 + 1, "seed " + seed + ": " + s);
      }
      firstStarts.add(s.planned().get(0).atMs());
    }
    assertTrue(firstStarts.stream().distinct().count() > 40, "times drawn, not the slots' starts: " + firstStarts);
  }

  @Test
  void runInjectsEachInTheScheduledOrder() throws Exception {
    FaultSchedule s = FaultSchedule.plan(7, faults(), 0, 600);
    List<FaultSchedule.Done> done = s.run(System.nanoTime());
    assertEquals(s.planned().stream().map(p -> p.fault().name()).toList(), injected);
    for (FaultSchedule.Done d : done) {
      assertTrue(d.startMs() >= d.planned().atMs(), "not before its time: " + d);
    }
  }

  @Test
  void noRoomIsAnError() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FaultSchedule.plan(1, faults(), 10, 10));
    assertTrue(e.getMessage().contains("no room for 6 faults"), e.getMessage());
  }
}
