package io.wattgraph.schema;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The shared ServiceMapping vectors in schemas/test-vectors/service-mapping, also checked by the
 * Rust service mapper's encoder (node-agent/tests/service_mapping_vectors.rs): the bytes it
 * publishes are the bytes the stream job decodes.
 */
class ServiceMappingVectorsTest extends SharedVectorsTest<ServiceMapping> {

  ServiceMappingVectorsTest() {
    super("service-mapping", 3, ServiceMapping.getClassSchema());
  }

  @Override
  ServiceMapping record(JsonNode e) {
    List<ServiceBackend> backends = new ArrayList<>();
    e.get("backends").forEach(b -> backends.add(ServiceBackend.newBuilder()
        .setAddress(b.get("address").asText())
        .setPort(b.get("port").asInt())
        .setNodeName(optText(b, "nodeName"))
        .build()));
    return ServiceMapping.newBuilder()
        .setVip(e.get("vip").asText())
        .setPort(e.get("port").asInt())
        .setProtocol(e.get("protocol").asText())
        .setNamespace(optText(e, "namespace"))
        .setService(optText(e, "service"))
        .setBackends(backends)
        .build();
  }

  @Override
  ByteBuffer encode(ServiceMapping r) throws IOException {
    return ServiceMapping.getEncoder().encode(r);
  }

  @Override
  ServiceMapping decode(byte[] b) throws IOException {
    return WattgraphSchemas.serviceMappingDecoder().decode(b);
  }
}
