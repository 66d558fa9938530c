package dev.lease.core.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.LeaseManager;
import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * Keeps docs/scheduling.md's code compiling and true: the code between the README markers below
 * must appear verbatim in docs/scheduling.md, and it runs here on SQLite.
 */
class ReadmeSchedulingExampleTest {

  /** What the example's job calls. */
  interface Invoices {
    void issueFor(Instant hour);
  }

  record Started(LeaseManager leases, LeaseScheduler scheduler) {}

  static Started example(DataSource dataSource, Invoices invoices) {
    // spotless:off
    // README:begin
    LeaseManager leases = LeaseManager.builder(dataSource)
        .instance("billing-1")               // this replica, for humans
        .createTableIfMissing()
        .build();

    // every hour at five past, once across all replicas running this same code
    Schedule hourly = Schedule.fixedRate(Duration.ofHours(1), Instant.parse("2026-01-01T00:05:00Z"));

    // your own schedule, for example every day at 02:00 UTC (or wrap a cron library)
    Schedule nightly = after -> {
      ZonedDateTime today = after.atZone(ZoneOffset.UTC).truncatedTo(ChronoUnit.DAYS).plusHours(2);
      return Optional.of(today.toInstant().isAfter(after) ? today.toInstant()
          : today.plusDays(1).toInstant());
    };

    LeaseScheduler scheduler = LeaseScheduler.builder(leases)
        .job("hourly-invoices", hourly, round -> invoices.issueFor(round.instant()))
        .job("nightly-cleanup", nightly, round -> {
          // runs under round.lease(), bound to this thread; interrupted if the lease is lost
        })
        .build();
    scheduler.start();
    // on shutdown: scheduler.close(), then leases.close()
    // README:end
    // spotless:on
    return new Started(leases, scheduler);
  }

  @Test
  void theReadmeExampleStartsAndStops() {
    try (HikariDataSource ds = TestDatabase.SQLITE.pooled(2)) {
      Started started = example(ds, hour -> {});
      assertTrue(started.scheduler().toString().contains("hourly-invoices"));
      started.scheduler().close();
      started.leases().close();
    }
  }

  @Test
  void theReadmeShowsExactlyTheCodeThatCompilesHere() throws IOException {
    Path module = Path.of("").toAbsolutePath();
    Path source =
        module.resolve("src/test/java/dev/lease/core/scheduler/ReadmeSchedulingExampleTest.java");
    Path readme = module.resolveSibling("docs").resolve("scheduling.md");
    List<String> block = new ArrayList<>();
    boolean in = false;
    for (String line : Files.readAllLines(source)) {
      if (line.trim().equals("// README:begin")) {
        in = true;
      } else if (line.trim().equals("// README:end")) {
        in = false;
      } else if (in) {
        block.add(line.length() >= 4 ? line.substring(4) : line.trim());
      }
    }
    assertTrue(block.size() > 10, "found the example in " + source);
    String readmeText = Files.readString(readme);
    assertTrue(
        readmeText.contains(String.join("\n", block)),
        "docs/scheduling.md must contain the example of "
            + source.getFileName()
            + " verbatim:\n"
            + String.join("\n", block));
  }

  @Test
  void theNightlyScheduleOfTheExampleIsTwoOClockUtc() {
    Schedule nightly =
        after -> {
          ZonedDateTime today =
              after.atZone(ZoneOffset.UTC).truncatedTo(ChronoUnit.DAYS).plusHours(2);
          return Optional.of(
              today.toInstant().isAfter(after) ? today.toInstant() : today.plusDays(1).toInstant());
        };
    assertEquals(
        Optional.of(Instant.parse("2026-03-01T02:00:00Z")),
        nightly.nextAfter(Instant.parse("2026-03-01T01:00:00Z")));
    assertEquals(
        Optional.of(Instant.parse("2026-03-02T02:00:00Z")),
        nightly.nextAfter(Instant.parse("2026-03-01T02:00:00Z")));
  }
}
