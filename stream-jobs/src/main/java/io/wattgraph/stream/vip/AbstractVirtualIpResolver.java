package io.wattgraph.stream.vip;

import io.wattgraph.stream.Role;
import io.wattgraph.stream.ServiceMappingUpdate;
import io.wattgraph.stream.source.Endpoints;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
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
 * Translates virtual service addresses (Kubernetes ClusterIP:port, DNAT to a backend) in one kind
 * of per-socket record, so that a client's view of a connection pairs with the backend's view: the
 * part shared by ConnectionEvent observations ({@link ConnectionVirtualIpResolver}) and TransactionStats
 * records ({@link TransactionVirtualIpResolver}). A subclass says how to read and rewrite its
 * records and how long a client record may wait for its backend (the horizon).
 *
 * <p>A client socket that dialled a VIP reports the VIP as its remote endpoint (the socket never
 * sees the NAT); the backend reports the client's real endpoint (no SNAT). Which backend conntrack
 * picked is not in the client's view, so the operator is keyed by the <em>client endpoint</em>
 * (ip:port of the client socket), which both views share, and the service mappings (VIP:port to
 * backends) are broadcast state:
 * <ul>
 *   <li>a client record towards a known VIP is rewritten to the backend: at once when the service
 *       has a single backend or this client endpoint's backend is already known; otherwise held
 *       until a server record from one of the service's backends for the same client endpoint
 *       turns up, which resolves it;</li>
 *   <li>a server record on a backend endpoint is passed on unchanged and remembered (for the
 *       retention period) to resolve client records that may come later;</li>
 *   <li>a held client record whose backend did not show within the horizon is passed on
 *       untranslated (the connection ends on an External VIP:port, as without mappings), and
 *       counted ({@code vipUnresolved}).</li>
 * </ul>
 * A record whose client port is 0 (the agent's merge of many short connections of one client
 * address) names no socket: it is rewritten only for a single-backend service, otherwise passed on
 * untranslated at once, and a server record of that kind teaches nothing. Everything else passes
 * through untouched. Records carrying the agent's NAT tuple (ConnectionEvent v2, TransactionStats
 * v4 {@code nat}) arrive already translated: their remote is the backend and their local the SNAT
 * endpoint the backend sees, so they pass through. Without it, with SNAT (the backend sees a node
 * address instead of the client's) the client endpoint differs on the two sides, so multi-backend
 * services stay unresolved (see stream-jobs/README.md).
 */
public abstract class AbstractVirtualIpResolver<T>
    extends KeyedBroadcastProcessFunction<String, T, ServiceMappingUpdate, T> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(AbstractVirtualIpResolver.class);

  /** VIP endpoint to its mapping. */
  public static final MapStateDescriptor<String, ServiceMappingUpdate> SERVICES =
      new MapStateDescriptor<>("service-mappings", Types.STRING, TypeInformation.of(ServiceMappingUpdate.class));
  /** Backend endpoint to the VIP endpoints it serves (reverse index of {@link #SERVICES}). */
  public static final MapStateDescriptor<String, String[]> BACKENDS =
      new MapStateDescriptor<>("service-backends", Types.STRING, BasicArrayTypeInfo.STRING_ARRAY_TYPE_INFO);
  /** The broadcast states of a resolver, as its operator registers them. */
  public static final List<MapStateDescriptor<?, ?>> BROADCAST_STATES = List.of(SERVICES, BACKENDS);

  /** Marks a client socket whose first records went on untranslated (no backend in time). */
  static final String UNRESOLVED = "";

  /** Of the records waiting for their backend, in state. */
  private final TypeInformation<T> pendingType;
  protected final long retentionMs;
  private final boolean keepUnresolvedOnOneKey;

  /** Backend endpoints that reported this client endpoint, with when. */
  private transient MapState<String, Long> seenBackends;
  /** VIP endpoint to the backend this client endpoint was translated to. */
  private transient MapState<String, String> resolved;
  private transient ListState<T> pending;
  private transient ValueState<Long> timer;
  private transient Counter translated;
  private transient Counter unresolved;

  /**
   * @param retentionMs how long (processing time) a backend's report and a client endpoint's
   *     backend are remembered after the last record of the key
   * @param keepUnresolvedOnOneKey whether a socket whose records once went on untranslated keeps
   *     going on untranslated (needed when the records are cumulative, so that one connection is not
   *     split over two keys and counted twice)
   */
  protected AbstractVirtualIpResolver(TypeInformation<T> pendingType, long retentionMs, boolean keepUnresolvedOnOneKey) {
    this.pendingType = pendingType;
    this.retentionMs = retentionMs;
    this.keepUnresolvedOnOneKey = keepUnresolvedOnOneKey;
  }

  // The record kind.
  protected abstract Role role(T r);

  protected abstract String localIp(T r);

  protected abstract int localPort(T r);

  protected abstract String remoteIp(T r);

  protected abstract int remotePort(T r);

  protected abstract boolean closed(T r);

  protected abstract void setRemote(T r, String ip, int port);

  /**
   * Arms the horizon of a client record about to be held for its backend; false when it cannot
   * wait (it then goes on untranslated at once).
   */
  protected abstract boolean hold(T r, ReadOnlyContext ctx) throws Exception;

  /** A backend reported this client endpoint (held records may now be resolvable). */
  protected abstract void backendSeen(ReadOnlyBroadcastState<String, ServiceMappingUpdate> services,
      Collector<T> out) throws Exception;

  /** A mapping update was applied to this subtask's broadcast state. */
  protected void applied(ServiceMappingUpdate u) {}

  @Override
  public void open(OpenContext openContext) throws Exception {
    seenBackends = getRuntimeContext().getMapState(new MapStateDescriptor<>("seen-backends", Types.STRING, Types.LONG));
    resolved = getRuntimeContext().getMapState(new MapStateDescriptor<>("resolved-vips", Types.STRING, Types.STRING));
    pending = getRuntimeContext().getListState(new ListStateDescriptor<>("pending", pendingType));
    timer = getRuntimeContext().getState(new ValueStateDescriptor<>("timer", Types.LONG));
    translated = getRuntimeContext().getMetricGroup().counter("vipTranslated");
    unresolved = getRuntimeContext().getMetricGroup().counter("vipUnresolved");
  }

  @Override
  public void processElement(T r, ReadOnlyContext ctx, Collector<T> out) throws Exception {
    ReadOnlyBroadcastState<String, ServiceMappingUpdate> services = ctx.getBroadcastState(SERVICES);
    long now = ctx.currentProcessingTime();
    Role role = role(r);
    if (role == Role.CLIENT) {
      ServiceMappingUpdate service = services.get(Endpoints.of(remoteIp(r), remotePort(r)));
      if (service == null || service.backends.length == 0) {
        out.collect(r);
        return;
      }
      String backend = backendFor(service, localPort(r));
      if (backend != null) {
        if (backend.equals(UNRESOLVED)) {
          out.collect(r); // this socket went out untranslated before: keep it on one key
        } else {
          emitTranslated(r, backend, out);
        }
        if (closed(r)) {
          resolved.remove(service.vipEndpoint); // the client port may be reused for another backend
        } else {
          schedule(ctx, now + retentionMs); // keep the choice while the socket is active
        }
        return;
      }
      if (localPort(r) == 0 || !hold(r, ctx)) {
        // Client port 0: many sockets merged, no one backend to wait for. Or too late to wait.
        unresolved.inc();
        out.collect(r);
        return;
      }
      pending.add(r);
      return;
    }
    out.collect(r);
    if (role == Role.SERVER && remotePort(r) != 0) {
      String local = Endpoints.of(localIp(r), localPort(r));
      if (ctx.getBroadcastState(BACKENDS).get(local) != null) {
        seenBackends.put(local, now);
        schedule(ctx, now + retentionMs);
        backendSeen(services, out);
      }
    }
  }

  /** The backend of this client endpoint for the service, when it is known. */
  private String backendFor(ServiceMappingUpdate service, int clientPort) throws Exception {
    if (service.backends.length == 1) {
      return service.backends[0];
    }
    if (clientPort == 0) {
      return null;
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

  /**
   * Held records that {@code mayGo} go on translated when their backend is known; those that
   * {@code mustGo} go on in any case (untranslated without a backend); the rest stay held. Returns
   * whether a socket was marked unresolved.
   */
  protected boolean releasePending(ReadOnlyBroadcastState<String, ServiceMappingUpdate> services,
      Collector<T> out, Predicate<T> mayGo, Predicate<T> mustGo) throws Exception {
    Iterable<T> held = pending.get();
    if (held == null || !held.iterator().hasNext()) {
      return false;
    }
    boolean marked = false;
    List<T> keep = new ArrayList<>();
    for (T r : held) {
      if (!mayGo.test(r)) {
        keep.add(r);
        continue;
      }
      ServiceMappingUpdate service = services.get(Endpoints.of(remoteIp(r), remotePort(r)));
      String backend = service == null ? null : backendFor(service, localPort(r));
      if (backend != null && !backend.equals(UNRESOLVED)) {
        emitTranslated(r, backend, out);
      } else if (mustGo.test(r) || service == null || backend != null) {
        if (service != null && backend == null) {
          if (keepUnresolvedOnOneKey) {
            resolved.put(service.vipEndpoint, UNRESOLVED);
            marked = true;
          }
          unresolved.inc();
          LOG.debug("No backend of {} reported client {}:{} within the horizon", service.vipEndpoint, localIp(r),
              localPort(r));
        }
        out.collect(r);
      } else {
        keep.add(r);
      }
    }
    pending.update(keep);
    return marked;
  }

  /** Fixes the backend of every held record that can be resolved now, without releasing it. */
  protected void resolveHeld(ReadOnlyBroadcastState<String, ServiceMappingUpdate> services) throws Exception {
    Iterable<T> held = pending.get();
    if (held != null) {
      for (T r : held) {
        ServiceMappingUpdate service = services.get(Endpoints.of(remoteIp(r), remotePort(r)));
        if (service != null) {
          backendFor(service, localPort(r));
        }
      }
    }
  }

  private void emitTranslated(T r, String backend, Collector<T> out) {
    int colon = backend.lastIndexOf(':');
    setRemote(r, backend.substring(0, colon), Integer.parseInt(backend.substring(colon + 1)));
    translated.inc();
    out.collect(r);
  }

  protected void schedule(ReadOnlyContext ctx, long at) throws Exception {
    Long t = timer.value();
    if (t == null || at > t) {
      // One timer per key, pushed back lazily: an earlier one re-checks and re-arms.
      if (t == null) {
        ctx.timerService().registerProcessingTimeTimer(at);
      }
      timer.update(t == null ? at : Math.max(t, at));
    }
  }

  /**
   * The retention, from a processing-time timer: drops backends not seen for a retention period, and
   * the whole key once nothing is held and the key's retention has passed. Returns whether the key
   * was forgotten.
   */
  protected boolean expire(long timestamp, OnTimerContext ctx, boolean marked) throws Exception {
    Long target = timer.value();
    if (marked) {
      target = target == null ? timestamp + retentionMs : Math.max(target, timestamp + retentionMs);
    }
    if (target != null && timestamp >= target && hasPending()) {
      target = timestamp + retentionMs; // records still wait for their horizon: keep what resolves them
    }
    if (target != null && timestamp < target) {
      timer.update(null);
      schedule(ctx, target);
      Iterator<Map.Entry<String, Long>> it = seenBackends.iterator();
      while (it.hasNext()) {
        if (it.next().getValue() + retentionMs <= timestamp) {
          it.remove();
        }
      }
      return false;
    }
    seenBackends.clear();
    resolved.clear();
    pending.clear();
    timer.clear();
    return true;
  }

  private boolean hasPending() throws Exception {
    Iterable<T> held = pending.get();
    return held != null && held.iterator().hasNext();
  }

  @Override
  public void processBroadcastElement(ServiceMappingUpdate u, Context ctx, Collector<T> out) throws Exception {
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
      applied(u);
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
    applied(u);
  }
}
