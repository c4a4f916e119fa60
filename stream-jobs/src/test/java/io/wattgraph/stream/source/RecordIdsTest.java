package io.wattgraph.stream.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.stream.RecordIdSet;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RecordIdsTest {
  @Test
  void theSameBytesHaveTheSameIdAndOneByteMoreAnother() {
    byte[] a = "host-a|PROCESS|42|1700000000000000000".getBytes(StandardCharsets.UTF_8);
    assertEquals(RecordIds.of(a), RecordIds.of(a.clone()));
    byte[] b = a.clone();
    b[b.length - 1]++;
    assertNotEquals(RecordIds.of(a), RecordIds.of(b));
    assertNotEquals(0, RecordIds.of(new byte[0]));
  }

  @Test
  void setKeepsEveryIdOnceThroughGrowth() {
    RecordIdSet set = new RecordIdSet();
    Random r = new Random(7);
    long[] ids = new long[10_000];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = r.nextLong() | 1;
      assertTrue(set.add(ids[i]));
    }
    assertEquals(ids.length, set.size);
    assertTrue(set.slots.length >= 2 * ids.length, "at most half full");
    for (long id : ids) {
      assertTrue(set.contains(id));
      assertFalse(set.add(id), "a second time");
    }
    assertFalse(set.contains(2));
    assertTrue(set.add(0), "0 is no id: always new, never kept");
    assertFalse(set.contains(0));
    RecordIdSet copy = new RecordIdSet();
    copy.addAll(set);
    assertEquals(set.size, copy.size);
  }
}
