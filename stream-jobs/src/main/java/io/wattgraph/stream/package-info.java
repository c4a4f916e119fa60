/**
 * The job ({@code CorrelationJob}, read top to bottom as the pipeline, with {@code Sources},
 * {@code Sinks}, {@code JobConfig}) and the types of its state.
 *
 * <p>The state types stay in this package whatever stage uses them: Flink writes their class names
 * into every checkpoint and savepoint (POJO and enum serializer snapshots), and a restarted job must
 * find them under those names. Connection graph: {@code ConnectionState}, {@code Side},
 * {@code Role}, {@code ConnectionStats}, {@code EdgeTotals}. Transactions waiting in state:
 * {@code Transaction}, {@code HttpRoute}, {@code LatencyHistogram}. Window accumulators:
 * {@code MetricsAccumulator}, {@code NamespaceAccumulator}, {@code EdgeAccumulator}, {@code CgroupAccumulator},
 * {@code TransactionTotals}, {@code HttpRouteTotals}, {@code PodMetadata}, {@code RecordIdSet},
 * {@code SeenRecords} (its nested {@code Windows}). VIP resolution: {@code ServiceMappingUpdate}.
 * The serializer snapshots of {@code typeinfo} are named in checkpoints too. Moving or renaming one
 * of them, or changing an operator's uid, breaks the restore of every earlier checkpoint:
 * {@code CheckpointCompatibilityIT} restores one of an earlier build, {@code JobUidsTest} checks
 * the uids. The stages' code lives in the subpackages and uses these types.
 */
package io.wattgraph.stream;
