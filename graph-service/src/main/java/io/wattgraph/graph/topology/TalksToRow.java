package io.wattgraph.graph.topology;

import org.neo4j.driver.types.Node;
import org.neo4j.driver.types.Relationship;

/** One TALKS_TO relationship with its client and server nodes, as read from Neo4j. */
public record TalksToRow(Node client, Relationship talk, Node server) {
}
