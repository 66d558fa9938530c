package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import jakarta.persistence.Entity;
import jakarta.persistence.EntityManager;
import jakarta.persistence.Id;
import jakarta.persistence.PersistenceContext;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.hibernate.boot.model.naming.Identifier;
import org.hibernate.boot.model.naming.PhysicalNamingStrategyStandardImpl;
import org.hibernate.engine.jdbc.env.spi.JdbcEnvironment;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/**
 * JPA/Hibernate through the fenced DataSource: a {@code @Leased @Transactional} method persists an
 * entity, its transaction verified; a transaction under a lease that is no longer held is refused
 * and nothing of it is committed. Negative control: with fencing off it commits.
 */
class JpaTest {

  @Entity(name = "Payment")
  public static class Payment {
    @Id Long id;
    String note;

    protected Payment() {}

    Payment(Long id, String note) {
      this.id = id;
      this.note = note;
    }
  }

  /** Maps the entity's table to the test's own table name. */
  public static class TestTableNames extends PhysicalNamingStrategyStandardImpl {
    private static final long serialVersionUID = 1L;
    static volatile String paymentTable;

    @Override
    public Identifier toPhysicalTableName(Identifier name, JdbcEnvironment environment) {
      return name.getText().equalsIgnoreCase("payment")
          ? Identifier.toIdentifier(paymentTable)
          : super.toPhysicalTableName(name, environment);
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    Payments payments() {
      return new Payments();
    }

    @Bean
    TestTableNames testTableNames() {
      return new TestTableNames();
    }
  }

  static class Payments {
    @PersistenceContext EntityManager em;

    @Leased("payments")
    @Transactional
    public void pay(long id) {
      em.persist(new Payment(id, "paid"));
    }

    @Transactional
    public void record(long id) {
      em.persist(new Payment(id, "recorded"));
    }
  }

  @OnEveryDatabase
  void jpaTransactionsAreFenced(TestDatabase db) throws Exception {
    List<Long> rows = scenario(db, true);
    assertEquals(List.of(1L), rows, "the transaction under the released lease was refused");
  }

  @OnEveryDatabase
  void negativeControlWithoutFencingTheStaleTransactionCommits(TestDatabase db) throws Exception {
    List<Long> rows = scenario(db, false);
    assertEquals(List.of(1L, 2L), rows);
  }

  private List<Long> scenario(TestDatabase db, boolean fencing) throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      String table = replicas.table("sb_payment");
      TestTableNames.paymentTable = table;
      Map<String, Object> p = new HashMap<>();
      p.put("spring.autoconfigure.exclude", "");
      p.put("spring.jpa.hibernate.ddl-auto", "create");
      p.put("spring.jpa.open-in-view", false);
      if (db.isSqlite()) {
        p.put("spring.jpa.database-platform", "org.hibernate.community.dialect.SQLiteDialect");
      }
      p.put("lease.fencing.enabled", fencing);
      p.put("lease.duration", "3s");
      ConfigurableApplicationContext ctx = replicas.start(App.class, "A", p);
      Payments payments = ctx.getBean(Payments.class);

      payments.pay(1);
      if (fencing) {
        assertEquals(
            1.0,
            Replicas.count(ctx, "lease.transactions", "lease", "payments", "outcome", "verified"),
            () -> Replicas.meters(ctx));
      }

      // a lease this replica no longer holds (released: another replica may hold it now)
      Lease stale = ctx.getBean(LeaseManager.class).tryClaim("payments").orElseThrow();
      stale.release();
      try (LeaseContext.Scope scope = LeaseContext.bind(stale)) {
        if (fencing) {
          RuntimeException e = assertThrows(RuntimeException.class, () -> payments.record(2));
          LeaseLostSQLException refusal = null;
          for (Throwable c = e; c != null && refusal == null; c = c.getCause()) {
            refusal = c instanceof LeaseLostSQLException l ? l : null;
          }
          assertNotNull(refusal, "refused by the fence: " + e);
          // what a Spring caller catches: the starter's translation, not JpaSystemException
          assertTrue(e instanceof LeaseLostDataAccessException, () -> "caught " + e);
          assertEquals(
              LeaseLostSQLException.REFUSED, ((LeaseLostDataAccessException) e).getSqlState());
        } else {
          payments.record(2);
        }
      }
      List<Long> rows =
          ctx.getBean(JdbcTemplate.class)
              .queryForList("SELECT id FROM " + table + " ORDER BY id", Long.class);
      assertTrue(rows.contains(1L));
      return rows;
    }
  }
}
