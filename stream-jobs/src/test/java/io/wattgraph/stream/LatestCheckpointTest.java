package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which checkpoint {@code --restore latest} picks, in Flink's directory layout. */
class LatestCheckpointTest {
  @TempDir
  Path dir;

  Path checkpoint(String job, int n, Long metadataTimeMs) throws Exception {
    Path chk = Files.createDirectories(dir.resolve(job).resolve("chk-" + n));
    if (metadataTimeMs != null) {
      Path m = Files.writeString(chk.resolve(LatestCheckpoint.METADATA), "x");
      Files.setLastModifiedTime(m, FileTime.fromMillis(metadataTimeMs));
    }
    return chk;
  }

  @Test
  void theNewestCompleteCheckpointOfAnyRun() throws Exception {
    assertEquals(Optional.empty(), LatestCheckpoint.under(dir.resolve("missing").toUri().toString()));
    assertEquals(Optional.empty(), LatestCheckpoint.under(dir.toUri().toString()));
    checkpoint("job-a", 7, 1_000_000L);
    Path newer = checkpoint("job-b", 2, 2_000_000L);
    checkpoint("job-b", 3, null); // in progress: no metadata yet
    Files.createDirectories(dir.resolve("job-b").resolve("shared"));
    Files.createDirectories(dir.resolve("job-b").resolve("taskowned"));
    Files.writeString(dir.resolve("stray-file"), "");
    String found = LatestCheckpoint.under(dir.toUri().toString()).orElseThrow();
    assertTrue(found.endsWith("job-b/chk-2"), found);
    assertEquals(newer.toUri().getPath().replaceAll("/$", ""), java.net.URI.create(found).getPath());
  }

  @Test
  void restoreFlagChoosesLatestNoneOrAGivenCheckpoint() throws Exception {
    JobConfig c = JobConfig.parse(new String[] {"--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2"});
    assertEquals(JobConfig.RESTORE_LATEST, c.restore);
    assertNull(CorrelationJob.restorePath(c), "no checkpoint directory: nothing to restore");
    c.checkpointDir = dir.toUri().toString();
    assertNull(CorrelationJob.restorePath(c), "an empty directory: the first run");
    checkpoint("job-a", 4, 1_000_000L);
    assertTrue(CorrelationJob.restorePath(c).endsWith("job-a/chk-4"));
    c.restore = JobConfig.RESTORE_NONE;
    assertNull(CorrelationJob.restorePath(c));
    c = JobConfig.parse(new String[] {"--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2",
        "--restore", "s3://bucket/savepoint-1"});
    assertEquals("s3://bucket/savepoint-1", CorrelationJob.restorePath(c));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> JobConfig.parse(new String[] {
        "--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2", "--restore", " "})).getMessage().contains("--restore"));
  }
}
