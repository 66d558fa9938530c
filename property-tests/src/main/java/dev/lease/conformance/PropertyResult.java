package dev.lease.conformance;

/**
 * What checking one property on one database found.
 *
 * @param property the property's id
 * @param database the database it ran on (postgresql, mysql, mariadb, sqlite, or "sqlite (virtual
 *     time)" for the simulations)
 * @param schedules schedules (generated command sequences, fault runs) tried
 * @param faults faults injected over all schedules
 * @param violations schedules that broke the property
 * @param failure the seed, the shrunk schedule and what broke, or null when the property holds
 * @param note what the run could not do on this database, or null
 */
public record PropertyResult(
    String property,
    String database,
    long schedules,
    long faults,
    long violations,
    String failure,
    String note,
    long millis) {

  public boolean holds() {
    return violations == 0 && failure == null;
  }
}
