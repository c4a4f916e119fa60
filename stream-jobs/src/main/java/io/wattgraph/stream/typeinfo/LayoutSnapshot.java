package io.wattgraph.stream.typeinfo;

import java.io.IOException;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Snapshot of a {@link RecordSerializer} whose layout changed: its version says which layout wrote
 * the state. Layout 1 is what these serializers wrote while their snapshots were Flink's
 * {@code SimpleTypeSerializerSnapshot} (version 3, no payload, under the same class name), so
 * checkpoints of that build are read by this class as layout 1. An older layout restores by
 * migration: Flink reads the state with {@link #restoreSerializer()} (a reader of that layout) and
 * writes it again with the current serializer.
 */
public abstract class LayoutSnapshot<T> implements TypeSerializerSnapshot<T> {
  /** The version SimpleTypeSerializerSnapshot wrote: layout 1. */
  private static final int LAYOUT_1_VERSION = 3;

  private int layout;
  private final int currentLayout;
  private final TypeSerializer<T> current;
  /** Readers of the older layouts: element i reads layout i + 1 (null: cannot be read). */
  private final TypeSerializer<T>[] older;

  /**
   * @param layout the layout this snapshot stands for
   * @param current the serializer of the newest layout, {@code older.length + 1}
   * @param older readers of layouts 1.. before it
   */
  @SafeVarargs
  protected LayoutSnapshot(int layout, TypeSerializer<T> current, TypeSerializer<T>... older) {
    this.layout = layout;
    this.currentLayout = older.length + 1;
    this.current = current;
    this.older = older;
  }

  private int currentLayout() {
    return currentLayout;
  }

  private TypeSerializer<T> reader(int l) {
    return l >= 1 && l <= older.length ? older[l - 1] : null;
  }

  @Override
  public int getCurrentVersion() {
    return LAYOUT_1_VERSION - 1 + layout;
  }

  @Override
  public void writeSnapshot(DataOutputView out) {
    // The version is the layout; nothing else to say.
  }

  @Override
  public void readSnapshot(int readVersion, DataInputView in, ClassLoader userCodeClassLoader) throws IOException {
    int l = readVersion - LAYOUT_1_VERSION + 1;
    if (l < 1 || l > currentLayout()) {
      throw new IOException(getClass().getName() + ": snapshot version " + readVersion + " is layout " + l
          + ", this build knows layouts 1.." + currentLayout());
    }
    layout = l;
  }

  public int layout() {
    return layout;
  }

  @Override
  public TypeSerializer<T> restoreSerializer() {
    return layout == currentLayout() ? current : reader(layout);
  }

  @Override
  public TypeSerializerSchemaCompatibility<T> resolveSchemaCompatibility(TypeSerializerSnapshot<T> old) {
    if (old.getClass() != getClass()) {
      return TypeSerializerSchemaCompatibility.incompatible();
    }
    int l = ((LayoutSnapshot<T>) old).layout;
    if (l == currentLayout()) {
      return TypeSerializerSchemaCompatibility.compatibleAsIs();
    }
    return l < currentLayout() && reader(l) != null
        ? TypeSerializerSchemaCompatibility.compatibleAfterMigration()
        : TypeSerializerSchemaCompatibility.incompatible();
  }

  @Override
  public boolean equals(Object o) {
    return o != null && o.getClass() == getClass() && ((LayoutSnapshot<?>) o).layout == layout;
  }

  @Override
  public int hashCode() {
    return getClass().hashCode() * 31 + layout;
  }

  @Override
  public String toString() {
    return getClass().getName() + "(layout " + layout + ")";
  }
}
