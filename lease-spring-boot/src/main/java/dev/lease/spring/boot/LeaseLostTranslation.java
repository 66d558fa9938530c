package dev.lease.spring.boot;

import java.sql.SQLException;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.Ordered;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.support.PersistenceExceptionTranslator;
import org.springframework.jdbc.support.JdbcAccessor;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.jdbc.support.SQLExceptionTranslator;
import org.springframework.util.ClassUtils;

/**
 * Registers {@link LeaseLostDataAccessException} with Spring's exception translation, on both
 * Spring Boot lines, whichever translator the application has: each {@code JdbcAccessor} bean
 * ({@code JdbcTemplate}) and {@code JdbcTransactionManager} gets its translator wrapped, and each
 * {@code JpaTransactionManager} its {@code JpaDialect}. A wrapper, not an {@code
 * SQLExceptionTranslator} bean or an {@code sql-error-codes.xml}: Spring 6 and 7 use {@code
 * SQLExceptionSubclassTranslator} unless the application ships its own error codes, Boot hands an
 * {@code SQLExceptionTranslator} bean to {@code JdbcTemplate} only, and Hibernate's commit failure
 * ({@code TransactionException} around the driver's exception) never reaches a JDBC translator;
 * each keeps its own translation for everything that is not a lost lease.
 */
final class LeaseLostTranslation implements BeanPostProcessor, Ordered {

  private static final boolean JPA =
      ClassUtils.isPresent(
          "org.springframework.orm.jpa.JpaTransactionManager",
          LeaseLostTranslation.class.getClassLoader());

  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    if (bean instanceof JdbcAccessor jdbc && !(jdbc.getExceptionTranslator() instanceof Jdbc)) {
      jdbc.setExceptionTranslator(new Jdbc(jdbc.getExceptionTranslator()));
    } else if (bean instanceof JdbcTransactionManager tm
        && !(tm.getExceptionTranslator() instanceof Jdbc)) {
      tm.setExceptionTranslator(new Jdbc(tm.getExceptionTranslator()));
    } else if (JPA) {
      LeaseLostJpaDialect.wrap(bean);
    }
    return bean;
  }

  /** A JDBC translator that knows the lost lease first, then asks the one it wraps. */
  static final class Jdbc implements SQLExceptionTranslator {
    private final SQLExceptionTranslator delegate;

    Jdbc(SQLExceptionTranslator delegate) {
      this.delegate = delegate;
    }

    @Override
    public DataAccessException translate(String task, String sql, SQLException ex) {
      LeaseLostDataAccessException lost = LeaseLostDataAccessException.find(task, ex);
      return lost != null ? lost : delegate.translate(task, sql, ex);
    }
  }

  /**
   * For {@code @Repository} beans (Spring Data JPA repositories, {@code EntityManager} calls):
   * asked before the other translators.
   */
  static final class Persistence implements PersistenceExceptionTranslator, Ordered {
    @Override
    public DataAccessException translateExceptionIfPossible(RuntimeException ex) {
      return LeaseLostDataAccessException.find(null, ex);
    }

    @Override
    public int getOrder() {
      return Ordered.HIGHEST_PRECEDENCE;
    }
  }
}
