package io.wattgraph.stream;

/** Which end of a connection an observing host is; mirrors the schema's ConnectionRole. */
public enum Role {
  CLIENT,
  SERVER,
  UNKNOWN
}
