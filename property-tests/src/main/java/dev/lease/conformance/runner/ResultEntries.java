package dev.lease.conformance.runner;

import dev.lease.conformance.PropertyResult;
import java.util.LinkedHashMap;
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

  static Map<String, String> encode(PropertyResult r) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("result", r.property());
    m.put("database", r.database());
    m.put("schedules", Long.toString(r.schedules()));
    m.put("faults", Long.toString(r.faults()));
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
    return new PropertyResult(
        m.get("result"),
        m.get("database"),
        Long.parseLong(m.get("schedules")),
        Long.parseLong(m.get("faults")),
        Long.parseLong(m.get("violations")),
        m.get("failure"),
        m.get("note"),
        Long.parseLong(m.get("millis")));
  }
}
