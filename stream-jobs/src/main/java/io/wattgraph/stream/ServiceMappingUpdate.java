package io.wattgraph.stream;

import java.util.Arrays;

/**
 * A change of one virtual service address (VIP:port): its backends now, or its deletion
 * (tombstone). Endpoints are in the job's canonical text form ({@code Endpoints#of}).
 */
public class ServiceMappingUpdate {
  /** The VIP endpoint, e.g. {@code 10.96.0.10:80}. */
  public String vipEndpoint;
  public boolean delete;
  /** Backend endpoints ({@code ip:port}); empty when deleted. */
  public String[] backends = new String[0];
  /** namespace/name of the Service, when known (logs only). */
  public String service;

  public ServiceMappingUpdate() {}

  public static ServiceMappingUpdate of(String vipEndpoint, String... backends) {
    ServiceMappingUpdate u = new ServiceMappingUpdate();
    u.vipEndpoint = vipEndpoint;
    u.backends = backends;
    return u;
  }

  public static ServiceMappingUpdate deletion(String vipEndpoint) {
    ServiceMappingUpdate u = new ServiceMappingUpdate();
    u.vipEndpoint = vipEndpoint;
    u.delete = true;
    return u;
  }

  @Override
  public String toString() {
    return delete ? "DELETE " + vipEndpoint : vipEndpoint + " -> " + Arrays.toString(backends);
  }
}
