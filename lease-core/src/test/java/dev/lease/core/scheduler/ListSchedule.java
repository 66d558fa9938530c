package dev.lease.core.scheduler;

import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ConcurrentSkipListSet;

/** A schedule of explicit instants that a test can add to while the scheduler runs. */
final class ListSchedule implements Schedule {

  private final ConcurrentSkipListSet<Long> instants = new ConcurrentSkipListSet<>();

  ListSchedule(long... instantsMs) {
    for (long i : instantsMs) {
      instants.add(i);
    }
  }

  void add(long instantMs) {
    instants.add(instantMs);
  }

  @Override
  public Optional<Instant> nextAfter(Instant after) {
    Long next = instants.higher(after.toEpochMilli());
    return next == null ? Optional.empty() : Optional.of(Instant.ofEpochMilli(next));
  }

  @Override
  public String toString() {
    return "instants " + instants;
  }
}
