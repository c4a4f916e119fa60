package io.wattgraph.stream;

/**
 * A set of {@code RecordIds} (open addressing, linear probing, at most half full). The ids are
 * hashes already, so their low bits index the table. A Flink POJO (public fields), kept inside
 * window accumulators and keyed state.
 */
public class RecordIdSet {
  /** 0 = empty slot (an id is never 0). */
  public long[] slots = new long[0];
  public int size;

  public RecordIdSet() {}

  /** Adds {@code id}; false when it was there already (0 is never added and always new). */
  public boolean add(long id) {
    if (id == 0) {
      return true;
    }
    if ((size + 1) * 2 > slots.length) {
      grow();
    }
    int mask = slots.length - 1;
    int i = (int) id & mask;
    while (slots[i] != 0) {
      if (slots[i] == id) {
        return false;
      }
      i = (i + 1) & mask;
    }
    slots[i] = id;
    size++;
    return true;
  }

  public boolean contains(long id) {
    if (id == 0 || size == 0) {
      return false;
    }
    int mask = slots.length - 1;
    for (int i = (int) id & mask; slots[i] != 0; i = (i + 1) & mask) {
      if (slots[i] == id) {
        return true;
      }
    }
    return false;
  }

  public void addAll(RecordIdSet o) {
    for (long id : o.slots) {
      if (id != 0) {
        add(id);
      }
    }
  }

  private void grow() {
    long[] old = slots;
    slots = new long[Math.max(8, old.length * 2)];
    size = 0;
    for (long id : old) {
      if (id != 0) {
        add(id);
      }
    }
  }
}
