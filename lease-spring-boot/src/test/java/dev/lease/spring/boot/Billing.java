package dev.lease.spring.boot;

// spotless:off
// README-BEGIN
import dev.lease.spring.boot.LeaseScheduled;
import dev.lease.spring.boot.Leased;
import java.time.Instant;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

@Component
public class Billing {
  private final JdbcTemplate jdbc;

  public Billing(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  // once across replicas at a time: skipped (the body does not run, it returns null) while
  // another replica runs it; its transaction is refused if the lease was lost
  @Leased("nightly-billing")
  @Transactional
  public Integer bill() {
    return jdbc.update("UPDATE invoice SET paid = true WHERE paid = false");
  }

  // each instant once across all replicas, judged by the database clock
  @LeaseScheduled(name = "hourly-invoices", cron = "0 5 * * * *")
  public void issue(Instant instant) {
    jdbc.update("INSERT INTO invoice_run (at_ms) VALUES (?)", instant.toEpochMilli());
  }
}
// README-END
// spotless:on
