package io.wattgraph.stream.vip;

import io.wattgraph.stream.Role;
import io.wattgraph.stream.ServiceMappingUpdate;
import io.wattgraph.stream.source.Observation;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ReadOnlyBroadcastState;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.util.Collector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Translates virtual service addresses in ConnectionEvent observations (the rules are
 * {@link AbstractVirtualIpResolver}'s), before {@code ConnectionCorrelator}. The connection path has
 * no event time: a client observation waits for its backend at most the pairing horizon of
 * processing time, and is released as soon as the backend's server observation shows. Observations
 * carry cumulative counters, so a socket whose observations once went on untranslated stays
 * untranslated (otherwise its connection would be split over two correlator keys and counted twice).
 */
public class ConnectionVirtualIpResolver extends AbstractVirtualIpResolver<Observation> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(ConnectionVirtualIpResolver.class);

  /** Mapping updates applied, over every subtask of this JVM (in-process tests wait on it). */
  public static final AtomicLong UPDATES_APPLIED = new AtomicLong();

  private final long horizonMs;

  /** Held client observations are released untranslated from this time on. */
  private transient ValueState<Long> pendingUntil;

  public ConnectionVirtualIpResolver(long horizonMs, long retentionMs) {
    super(TypeInformation.of(Observation.class), retentionMs, true);
    this.horizonMs = horizonMs;
  }

  @Override
  public void open(OpenContext openContext) throws Exception {
    super.open(openContext);
    pendingUntil = getRuntimeContext().getState(new ValueStateDescriptor<>("pending-until", Types.LONG));
  }

  @Override
  protected Role role(Observation o) {
    return o.role;
  }

  @Override
  protected String localIp(Observation o) {
    return o.localIp;
  }

  @Override
  protected int localPort(Observation o) {
    return o.localPort;
  }

  @Override
  protected String remoteIp(Observation o) {
    return o.remoteIp;
  }

  @Override
  protected int remotePort(Observation o) {
    return o.remotePort;
  }

  @Override
  protected boolean closed(Observation o) {
    return o.closed;
  }

  @Override
  protected void setRemote(Observation o, String ip, int port) {
    o.remoteIp = ip;
    o.remotePort = port;
  }

  @Override
  protected boolean hold(Observation o, ReadOnlyContext ctx) throws Exception {
    long until = ctx.currentProcessingTime() + horizonMs;
    pendingUntil.update(until);
    // Its own timer: the key's lazy timer may be set later than the horizon.
    ctx.timerService().registerProcessingTimeTimer(until);
    schedule(ctx, until);
    return true;
  }

  @Override
  protected void backendSeen(ReadOnlyBroadcastState<String, ServiceMappingUpdate> services,
      Collector<Observation> out) throws Exception {
    releasePending(services, out, o -> true, o -> false);
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<Observation> out) throws Exception {
    // Held client observations whose horizon passed go on untranslated.
    Long until = pendingUntil.value();
    boolean force = until != null && timestamp >= until;
    boolean marked = releasePending(ctx.getBroadcastState(SERVICES), out, o -> true, o -> force);
    if (force) {
      pendingUntil.clear();
    }
    if (expire(timestamp, ctx, marked)) {
      pendingUntil.clear();
    }
  }

  @Override
  protected void applied(ServiceMappingUpdate u) {
    UPDATES_APPLIED.incrementAndGet();
    if (u.delete) {
      LOG.info("Service mapping removed: {}", u.vipEndpoint);
    } else {
      LOG.info("Service mapping {}{}", u, u.service == null ? "" : " (" + u.service + ")");
    }
  }

  /** The key: the client's endpoint, which both views of a connection share even through DNAT. */
  public static final class ByClientEndpoint implements KeySelector<Observation, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Observation o) {
      return switch (o.role) {
        case CLIENT -> o.localEndpoint();
        case SERVER -> o.remoteEndpoint();
        case UNKNOWN -> o.connectionKey();
      };
    }
  }
}
