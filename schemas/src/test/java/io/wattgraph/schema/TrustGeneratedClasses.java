package io.wattgraph.schema;

import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * Loads {@link WattgraphSchemas} (which trusts the generated classes in Avro 1.12) before any test
 * runs, so a test that builds a record with a record-array default or decodes with a generated
 * decoder works whatever ran before it in the JVM. Production code reaches the generated classes
 * through WattgraphSchemas' encoders and decoders first (stream-jobs README, untrusted input).
 */
public final class TrustGeneratedClasses implements LauncherSessionListener {
  @Override
  public void launcherSessionOpened(LauncherSession session) {
    WattgraphSchemas.historicSchemas();
  }
}
