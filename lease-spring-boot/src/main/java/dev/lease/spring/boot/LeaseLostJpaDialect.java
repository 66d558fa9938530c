package dev.lease.spring.boot;

import jakarta.persistence.EntityManager;
import java.sql.SQLException;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.ConnectionHandle;
import org.springframework.orm.jpa.JpaDialect;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.TransactionDefinition;

/**
 * A {@code JpaTransactionManager}'s dialect that knows the lost lease first: Hibernate reports a
 * refused commit as a {@code TransactionException} around the driver's exception, which its dialect
 * turns into a {@code JpaSystemException}. Everything else is the wrapped dialect's.
 */
final class LeaseLostJpaDialect implements JpaDialect {

  private final JpaDialect delegate;

  private LeaseLostJpaDialect(JpaDialect delegate) {
    this.delegate = delegate;
  }

  /** Wraps {@code bean}'s dialect if it is a {@code JpaTransactionManager}. */
  static void wrap(Object bean) {
    if (bean instanceof JpaTransactionManager tm
        && !(tm.getJpaDialect() instanceof LeaseLostJpaDialect)) {
      tm.setJpaDialect(new LeaseLostJpaDialect(tm.getJpaDialect()));
    }
  }

  @Override
  public DataAccessException translateExceptionIfPossible(RuntimeException ex) {
    LeaseLostDataAccessException lost = LeaseLostDataAccessException.find("JPA", ex);
    return lost != null ? lost : delegate.translateExceptionIfPossible(ex);
  }

  @Override
  public Object beginTransaction(EntityManager entityManager, TransactionDefinition definition)
      throws SQLException {
    return delegate.beginTransaction(entityManager, definition);
  }

  @Override
  public Object prepareTransaction(EntityManager entityManager, boolean readOnly, String name) {
    return delegate.prepareTransaction(entityManager, readOnly, name);
  }

  @Override
  public void cleanupTransaction(Object transactionData) {
    delegate.cleanupTransaction(transactionData);
  }

  @Override
  public ConnectionHandle getJdbcConnection(EntityManager entityManager, boolean readOnly)
      throws SQLException {
    return delegate.getJdbcConnection(entityManager, readOnly);
  }

  @Override
  public void releaseJdbcConnection(ConnectionHandle conHandle, EntityManager em)
      throws SQLException {
    delegate.releaseJdbcConnection(conHandle, em);
  }
}
