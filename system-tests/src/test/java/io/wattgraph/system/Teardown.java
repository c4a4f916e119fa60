package io.wattgraph.system;

import java.util.ArrayList;
import java.util.List;

/**
 * What a test started, closed in reverse order of starting; a failure to close one part is
 * printed, not thrown, so the rest is still torn down. Parts may be added from several threads
 * (the soak's load drivers).
 */
final class Teardown implements AutoCloseable {
  private final List<AutoCloseable> started = new ArrayList<>();

  synchronized <T extends AutoCloseable> T add(T c) {
    started.add(c);
    return c;
  }

  @Override
  public synchronized void close() {
    for (int i = started.size() - 1; i >= 0; i--) {
      try {
        started.get(i).close();
      } catch (Exception e) {
        System.err.println("teardown: " + e);
      }
    }
    started.clear();
  }
}
