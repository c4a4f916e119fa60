package io.wattgraph.stream;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.Optional;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

/**
 * The newest complete checkpoint under a job's checkpoint directory, of any earlier run: Flink
 * writes {@code <dir>/<job id>/chk-<n>/_metadata} last, when the checkpoint completes, and a new
 * run gets a new job id, so a restart of the job (not of its tasks) finds its state here.
 * Any Flink file system (file://, s3://, ...).
 */
final class LatestCheckpoint {
  private LatestCheckpoint() {}

  static final String METADATA = "_metadata";

  /** The newest {@code chk-<n>} directory with its metadata (by the metadata's time, then n). */
  static Optional<String> under(String checkpointDir) throws IOException {
    Path root = new Path(checkpointDir);
    FileSystem fs = root.getFileSystem();
    if (!fs.exists(root)) {
      return Optional.empty();
    }
    Path best = null;
    long bestTime = Long.MIN_VALUE;
    long bestN = -1;
    for (FileStatus job : list(fs, root)) {
      if (!job.isDir()) {
        continue;
      }
      for (FileStatus chk : list(fs, job.getPath())) {
        String name = chk.getPath().getName();
        if (!chk.isDir() || !name.matches("chk-\\d{1,18}")) {
          continue;
        }
        long time;
        try {
          time = fs.getFileStatus(new Path(chk.getPath(), METADATA)).getModificationTime();
        } catch (FileNotFoundException e) {
          continue; // in progress or aborted
        }
        long n = Long.parseLong(name.substring(4));
        if (time > bestTime || (time == bestTime && n > bestN)) {
          best = chk.getPath();
          bestTime = time;
          bestN = n;
        }
      }
    }
    return Optional.ofNullable(best).map(Path::toString);
  }

  private static FileStatus[] list(FileSystem fs, Path dir) throws IOException {
    FileStatus[] s = fs.listStatus(dir);
    return s == null ? new FileStatus[0] : s;
  }
}
