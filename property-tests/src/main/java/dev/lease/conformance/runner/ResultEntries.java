package dev.lease.conformance.runner;

import dev.lease.conformance.PropertyResult;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Carries progress and results from the suite to the runner as JUnit report entries. */
final class ResultEntries {

  private ResultEntries() {}

  static Map<String, String> progress(String property, long schedules, long faults) {
    return Map.of(
        "progress",
        property,
        "schedules",
        Long.toString(schedules),
        "faults",
        Long.toString(faults));
  }

  /** A control that does not apply to the target, and why. */
  static Map<String, String> notApplicable(String control, String database, String why) {
    return Map.of("notApplicable", control, "database", database, "why", why);
  }

  static Map<String, String> encode(PropertyResult r) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("result", r.property());
    m.put("database", r.database());
    m.put("schedules", Long.toString(r.schedules()));
    m.put("faults", Long.toString(r.faults()));
    StringBuilder counts = new StringBuilder();
    for (PropertyResult.Count c : r.counts()) {
      if (counts.length() > 0) {
        counts.append(';');
      }
      counts.append(c.event()).append('=').append(c.observed()).append('/').append(c.required());
    }
    m.put("counts", counts.toString());
    m.put("violations", Long.toString(r.violations()));
    m.put("millis", Long.toString(r.millis()));
    if (r.failure() != null) {
      m.put("failure", r.failure());
    }
    if (r.note() != null) {
      m.put("note", r.note());
    }
    return m;
  }

  static PropertyResult decode(Map<String, String> m) {
    List<PropertyResult.Count> counts = new ArrayList<>();
    String encoded = m.getOrDefault("counts", "");
    if (!encoded.isEmpty()) {
      for (String c : encoded.split(";")) {
        int eq = c.lastIndexOf('=');
        int slash = c.lastIndexOf('/');
        counts.add(
            new PropertyResult.Count(
                c.substring(0, eq),
                Long.parseLong(c.substring(eq + 1, slash)),
                Long.parseLong(c.substring(slash + 1))));
      }
    }
    return new PropertyResult(
        m.get("result"),
        m.get("database"),
        Long.parseLong(m.get("schedules")),
        Long.parseLong(m.get("faults")),
        counts,
        Long.parseLong(m.get("violations")),
        m.get("failure"),
        m.get("note"),
        Long.parseLong(m.get("millis")));
  }
}
