package dev.lease.conformance.text;

import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Target;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The events a SQL-text property run counted, each with how often it must be observed for the run
 * to count as a test (0: shown for information). A run that saw too few is inconclusive, never a
 * pass.
 */
final class TextCounts {

  private final Map<String, long[]> counts = new LinkedHashMap<>(); // {observed, required}

  synchronized void require(String event, long required) {
    counts.computeIfAbsent(event, e -> new long[2])[1] = required;
  }

  synchronized void info(String event, long observed) {
    counts.computeIfAbsent(event, e -> new long[2])[0] = observed;
  }

  synchronized void add(String event, long n) {
    counts.computeIfAbsent(event, e -> new long[2])[0] += n;
  }

  synchronized long observed(String event) {
    long[] c = counts.get(event);
    return c == null ? 0 : c[0];
  }

  /** The required events observed too rarely, described; empty when the run counts. */
  synchronized String missing() {
    return counts.entrySet().stream()
        .filter(e -> e.getValue()[0] < e.getValue()[1])
        .map(e -> e.getKey() + " " + e.getValue()[0] + " (needs " + e.getValue()[1] + ")")
        .collect(Collectors.joining(", "));
  }

  @Override
  public synchronized String toString() {
    return counts.entrySet().stream()
        .map(
            e ->
                e.getKey()
                    + " "
                    + e.getValue()[0]
                    + (e.getValue()[1] > 0 ? " (needs " + e.getValue()[1] + ")" : ""))
        .collect(Collectors.joining("; "));
  }

  /**
   * The run as a {@link PropertyResult}: a violation fails it; too few required events make it
   * INCONCLUSIVE (see {@link PropertyResult#verdict()}), never a pass.
   */
  synchronized PropertyResult result(
      String id, Target target, long schedules, String failure, String note, long startedNanos) {
    List<PropertyResult.Count> list = new ArrayList<>();
    counts.forEach((event, c) -> list.add(new PropertyResult.Count(event, c[0], c[1])));
    return new PropertyResult(
        id,
        target.label(),
        schedules,
        observed("takeovers with the script's transaction open"),
        list,
        failure == null ? 0 : 1,
        failure,
        note,
        (System.nanoTime() - startedNanos) / 1_000_000);
  }
}
