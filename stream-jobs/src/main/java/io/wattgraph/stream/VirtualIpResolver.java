package io.wattgraph.stream;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReadOnlyBroadcastState;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.BasicArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.co.KeyedBroadcastProcessFunction;
import org.apache.flink.util.Collector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Translates virtual service addresses (Kubernetes ClusterIP:port, DNAT to a backend) so that a
 * client's view of a connection pairs with the backend's view.
 *
 * <p>A client socket that dialled a VIP reports the VIP as its remote endpoint (the socket never
 * sees the NAT); the backend reports the client's real endpoint (no SNAT). Which backend conntrack
 * picked is not in the client's view, so this operator is keyed by the <em>client endpoint</em>
 * (ip:port of the client socket), which both views share, and the service mappings (VIP:port to
 * backends) are broadcast state:
 * <ul>
 *   <li>a client observation towards a known VIP is rewritten to the backend: at once when the
 *       service has a single backend or this client endpoint's backend is already known; otherwise
 *       held until a server observation from one of the service's backends for the same client
 *       endpoint turns up, which resolves it;</li>
 *   <li>a server observation on a backend endpoint is passed on unchanged and remembered (for the
 *       closed-retention period) to resolve client observations that may come later;</li>
 *   <li>a held client observation whose backend did not show within the pairing horizon is passed
 *       on untranslated (the connection ends on an External VIP:port, as without mappings).</li>
 * </ul>
 * Everything else passes through untouched. With SNAT (the backend sees a node address instead of
 * the client's) the client endpoint differs on the two sides, so multi-backend services stay
 * unresolved (see stream-jobs/README.md).
 */
public class VirtualIpResolver
    extends KeyedBroadcastProcessFunction<String, Observation, ServiceMappingUpdate, Observation> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(VirtualIpResolver.class);

  /** VIP endpoint to its mapping. */
  public static final MapStateDescriptor<String, ServiceMappingUpdate> SERVICES =
      new MapStateDescriptor<>("service-mappings", Types.STRING, TypeInformation.of(ServiceMappingUpdate.class));
  /** Backend endpoint to the VIP endpoints it serves (reverse index of {@link #SERVICES}). */
  public static final MapStateDescriptor<String, String[]> BACKENDS =
      new MapStateDescriptor<>("service-backends", Types.STRING, BasicArrayTypeInfo.STRING_ARRAY_TYPE_INFO);

  /** Mapping updates applied, over every subtask of this JVM (in-process tests wait on it). */
  public static final java.util.concurrent.atomic.AtomicLong UPDATES_APPLIED = new java.util.concurrent.atomic.AtomicLong();

  /** Marks a client socket whose first observations went on untranslated (no backend in time). */
  static final String UNRESOLVED = "";

  private final long horizonMs;
  private final long retentionMs;

  /** Backend endpoints that reported this client endpoint, with when. */
  private transient MapState<String, Long> seenBackends;
  /** VIP endpoint to the backend this client endpoint was translated to. */
  private transient MapState<String, String> resolved;
  private transient ListState<Observation> pending;
  private transient ValueState<Long> timer;
  /** Held client observations are released untranslated from this time on. */
  private transient ValueState<Long> pendingUntil;
  private transient Counter translated;
  private transient Counter unresolved;

  public VirtualIpResolver(long horizonMs, long retentionMs) {
    this.horizonMs = horizonMs;
    this.retentionMs = retentionMs;
  }

  @Override
  public void open(OpenContext openContext) {
    seenBackends = getRuntimeContext().getMapState(new MapStateDescriptor<>("seen-backends", Types.STRING, Types.LONG));
    resolved = getRuntimeContext().getMapState(new MapStateDescriptor<>("resolved-vips", Types.STRING, Types.STRING));
    pending = getRuntimeContext().getListState(new ListStateDescriptor<>("pending", Observation.class));
    timer = getRuntimeContext().getState(new ValueStateDescriptor<>("timer", Types.LONG));
    pendingUntil = getRuntimeContext().getState(new ValueStateDescriptor<>("pending-until", Types.LONG));
    translated = getRuntimeContext().getMetricGroup().counter("vipTranslated");
    unresolved = getRuntimeContext().getMetricGroup().counter("vipUnresolved");
  }

  @Override
  public void processElement(Observation o, ReadOnlyContext ctx, Collector<Observation> out) throws Exception {
    ReadOnlyBroadcastState<String, ServiceMappingUpdate> services = ctx.getBroadcastState(SERVICES);
    long now = ctx.currentProcessingTime();
    if (o.role == Role.CLIENT) {
      ServiceMappingUpdate service = services.get(o.remoteEndpoint());
      if (service == null || service.backends.length == 0) {
        out.collect(o);
        return;
      }
      String backend = backendFor(service);
      if (backend != null) {
        if (backend.equals(UNRESOLVED)) {
          out.collect(o); // this socket went out untranslated before: keep it on one key
        } else {
          emitTranslated(o, backend, out);
        }
        if (o.closed) {
          resolved.remove(service.vipEndpoint); // the client port may be reused for another backend
        } else {
          schedule(ctx, now + retentionMs); // keep the choice while the socket is active
        }
        return;
      }
      pending.add(o);
      pendingUntil.update(now + horizonMs);
      // Its own timer: the key's lazy timer may be set later than the horizon.
      ctx.timerService().registerProcessingTimeTimer(now + horizonMs);
      schedule(ctx, now + horizonMs);
      return;
    }
    out.collect(o);
    if (o.role == Role.SERVER) {
      String[] vips = ctx.getBroadcastState(BACKENDS).get(o.localEndpoint());
      if (vips != null) {
        seenBackends.put(o.localEndpoint(), now);
        schedule(ctx, now + retentionMs);
        releasePending(services, out, false);
      }
    }
  }

  /** The backend of this client endpoint for the service, when it is known. */
  private String backendFor(ServiceMappingUpdate service) throws Exception {
    if (service.backends.length == 1) {
      return service.backends[0];
    }
    String r = resolved.get(service.vipEndpoint);
    if (r != null) {
      return r;
    }
    for (String b : service.backends) {
      if (seenBackends.contains(b)) {
        resolved.put(service.vipEndpoint, b);
        return b;
      }
    }
    return null;
  }

  /** Emits what can now be resolved; with {@code force}, the rest untranslated. */
  /** Returns whether a socket was marked unresolved. */
  private boolean releasePending(ReadOnlyBroadcastState<String, ServiceMappingUpdate> services,
      Collector<Observation> out, boolean force) throws Exception {
    Iterable<Observation> held = pending.get();
    if (held == null || !held.iterator().hasNext()) {
      return false;
    }
    boolean marked = false;
    List<Observation> keep = new ArrayList<>();
    for (Observation o : held) {
      ServiceMappingUpdate service = services.get(o.remoteEndpoint());
      String backend = service == null ? null : backendFor(service);
      if (backend != null && !backend.equals(UNRESOLVED)) {
        emitTranslated(o, backend, out);
      } else if (force || service == null || backend != null) {
        if (service != null && backend == null) {
          // The rest of this socket's observations must take the same (untranslated) key, or the
          // connection would be split over two correlator keys and counted twice.
          resolved.put(service.vipEndpoint, UNRESOLVED);
          marked = true;
          unresolved.inc();
          LOG.debug("No backend of {} reported client {} within the horizon", o.remoteEndpoint(), o.localEndpoint());
        }
        out.collect(o);
      } else {
        keep.add(o);
      }
    }
    pending.update(keep);
    return marked;
  }

  private void emitTranslated(Observation o, String backend, Collector<Observation> out) {
    int colon = backend.lastIndexOf(':');
    o.remoteIp = backend.substring(0, colon);
    o.remotePort = Integer.parseInt(backend.substring(colon + 1));
    translated.inc();
    out.collect(o);
  }

  private void schedule(ReadOnlyContext ctx, long at) throws Exception {
    Long t = timer.value();
    if (t == null || at > t) {
      // One timer per key, pushed back lazily: an earlier one re-checks and re-arms.
      if (t == null) {
        ctx.timerService().registerProcessingTimeTimer(at);
      }
      timer.update(t == null ? at : Math.max(t, at));
    }
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<Observation> out) throws Exception {
    Long target = timer.value();
    ReadOnlyBroadcastState<String, ServiceMappingUpdate> services = ctx.getBroadcastState(SERVICES);
    // Held client observations whose horizon passed go on untranslated.
    Long until = pendingUntil.value();
    boolean force = until != null && timestamp >= until;
    boolean marked = releasePending(services, out, force);
    if (force) {
      pendingUntil.clear();
    }
    if (marked) {
      target = target == null ? timestamp + retentionMs : Math.max(target, timestamp + retentionMs);
    }
    if (target != null && timestamp < target) {
      timer.update(null);
      schedule(ctx, target);
      // Drop backends not seen for a retention period.
      Iterator<Map.Entry<String, Long>> it = seenBackends.iterator();
      while (it.hasNext()) {
        if (it.next().getValue() + retentionMs <= timestamp) {
          it.remove();
        }
      }
      return;
    }
    seenBackends.clear();
    resolved.clear();
    pending.clear();
    pendingUntil.clear();
    timer.clear();
  }

  @Override
  public void processBroadcastElement(ServiceMappingUpdate u, Context ctx, Collector<Observation> out)
      throws Exception {
    BroadcastState<String, ServiceMappingUpdate> services = ctx.getBroadcastState(SERVICES);
    BroadcastState<String, String[]> backends = ctx.getBroadcastState(BACKENDS);
    ServiceMappingUpdate old = services.get(u.vipEndpoint);
    if (old != null) {
      for (String b : old.backends) {
        String[] vips = backends.get(b);
        if (vips != null) {
          String[] rest = Arrays.stream(vips).filter(v -> !v.equals(u.vipEndpoint)).toArray(String[]::new);
          if (rest.length == 0) {
            backends.remove(b);
          } else {
            backends.put(b, rest);
          }
        }
      }
    }
    if (u.delete) {
      services.remove(u.vipEndpoint);
      UPDATES_APPLIED.incrementAndGet();
      LOG.info("Service mapping removed: {}", u.vipEndpoint);
      return;
    }
    services.put(u.vipEndpoint, u);
    for (String b : u.backends) {
      String[] vips = backends.get(b);
      if (vips == null) {
        backends.put(b, new String[] {u.vipEndpoint});
      } else if (!Arrays.asList(vips).contains(u.vipEndpoint)) {
        String[] more = Arrays.copyOf(vips, vips.length + 1);
        more[vips.length] = u.vipEndpoint;
        backends.put(b, more);
      }
    }
    UPDATES_APPLIED.incrementAndGet();
    LOG.info("Service mapping {}{}", u, u.service == null ? "" : " (" + u.service + ")");
  }
}
