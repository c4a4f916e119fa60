package io.wattgraph.stream.source;

import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.util.clock.RelativeClock;

/**
 * Watermarks of one Kafka partition (split) that follow each host's clock separately: the
 * watermark is the lowest over the partition's active hosts of (highest event time of the host −
 * bound − 1). Flink's bounded out-of-orderness takes the highest event time of the whole partition,
 * so a host whose clock runs behind another host's on the same partition by more than the bound plus
 * the allowed lateness had all its records counted as late. Here a host behind only holds the
 * watermark back, as a host on another partition does; the skew costs latency, not data.
 *
 * <p>Idleness per host: a host without records for {@code idlenessMs} (its input activity clock: time
 * under backpressure does not count) stops holding the watermark back and is forgotten (bounded
 * state: the hosts heard from within the idleness). When no host of the partition is active, the
 * watermark moves on to the highest of the hosts that went quiet (what a single per-partition
 * watermark would have reached: their windows close) and the partition is marked idle, as
 * {@code WatermarkStrategy.withIdleness} does. A host heard from again rejoins with its new
 * records: ones already behind the watermark are late, as before.
 */
public final class PerHostWatermarks<T> implements WatermarkGenerator<T> {
  /** The host of a record, null for records without one (dead letters: no event time either). */
  public interface HostOf<T> extends java.io.Serializable {
    String of(T record);
  }

  private static final class HostClock {
    long maxTimestamp = Long.MIN_VALUE;
    boolean activeSinceEmit = true;
    long lastActiveMs;
  }

  private final HostOf<T> hostOf;
  private final long boundMs;
  private final long idlenessMs;
  private final RelativeClock clock;
  private final Map<String, HostClock> hosts = new HashMap<>();
  private long emitted = Long.MIN_VALUE;
  private boolean idle;
  /** When a host of this partition was last active (at first, when the generator started). */
  private long quietSinceMs;
  /** The highest own watermark of the hosts forgotten as idle. */
  private long idleHighest = Long.MIN_VALUE;

  public PerHostWatermarks(HostOf<T> hostOf, long boundMs, long idlenessMs, RelativeClock clock) {
    this.hostOf = hostOf;
    this.boundMs = boundMs;
    this.idlenessMs = idlenessMs;
    this.clock = clock;
    this.quietSinceMs = clock.relativeTimeMillis();
  }

  @Override
  public void onEvent(T record, long timestamp, WatermarkOutput output) {
    String host = hostOf.of(record);
    if (host == null) {
      return;
    }
    HostClock h = hosts.get(host);
    if (h == null) {
      h = new HostClock();
      h.lastActiveMs = clock.relativeTimeMillis();
      hosts.put(host, h);
    }
    h.maxTimestamp = Math.max(h.maxTimestamp, timestamp);
    h.activeSinceEmit = true;
  }

  @Override
  public void onPeriodicEmit(WatermarkOutput output) {
    long now = clock.relativeTimeMillis();
    long lowest = Long.MAX_VALUE;
    for (Iterator<HostClock> it = hosts.values().iterator(); it.hasNext(); ) {
      HostClock h = it.next();
      if (h.activeSinceEmit) {
        h.activeSinceEmit = false;
        h.lastActiveMs = now;
        quietSinceMs = now;
      } else if (now - h.lastActiveMs >= idlenessMs) {
        idleHighest = Math.max(idleHighest, h.maxTimestamp - boundMs - 1);
        it.remove();
        continue;
      }
      lowest = Math.min(lowest, h.maxTimestamp - boundMs - 1);
    }
    if (lowest == Long.MAX_VALUE) {
      // No active host for the idleness (all went quiet, or none ever came: a partition no host
      // hashes to): the partition no longer holds the watermark back.
      if (!idle && now - quietSinceMs >= idlenessMs) {
        if (idleHighest > emitted) {
          // Idle only at the next emit: Flink drops a split's watermark that comes with its idleness.
          emitted = idleHighest;
          output.emitWatermark(new Watermark(idleHighest));
          return;
        }
        output.markIdle();
        idle = true;
      }
      return;
    }
    if (idle) {
      output.markActive();
      idle = false;
    }
    if (lowest > emitted) {
      emitted = lowest;
      output.emitWatermark(new Watermark(lowest));
    }
  }

  /** Hosts currently holding the watermark (tests). */
  int activeHosts() {
    return hosts.size();
  }
}
