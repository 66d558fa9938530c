package dev.lease.spring.boot;

import dev.lease.core.Lease;
import dev.lease.jdbc.LeaseLostSQLException;
import java.sql.SQLException;
import java.util.Optional;
import org.springframework.dao.ConcurrencyFailureException;

/**
 * What a Spring caller catches when a fenced transaction was refused because its lease is not (or
 * no longer) held: the verify found another holder ({@value LeaseLostSQLException#REFUSED}), or the
 * transaction was poisoned because its lease was lost while it was open ({@value
 * LeaseLostSQLException#POISONED}), including when the database ended the session first because of
 * the lease's own idle-in-transaction bound. Nothing of the transaction committed.
 *
 * <p>The starter registers it with Spring's exception translation: {@code JdbcTemplate} (every
 * {@code JdbcAccessor} bean), {@code JdbcTransactionManager}'s commit, {@code
 * JpaTransactionManager} (Hibernate) and {@code @Repository} beans. It is a {@link
 * ConcurrencyFailureException} (transient): another replica took the lease over. Retrying the
 * transaction under the same lost lease is refused again; a new {@code @Leased} call claims anew
 * (and is skipped while the other replica holds the lease).
 */
public class LeaseLostDataAccessException extends ConcurrencyFailureException {

  private static final long serialVersionUID = 1L;

  private final String sqlState;

  public LeaseLostDataAccessException(String message, LeaseLostSQLException cause) {
    super(message + "; " + cause.getMessage(), cause);
    this.sqlState = cause.getSQLState();
  }

  /** {@value LeaseLostSQLException#REFUSED} or {@value LeaseLostSQLException#POISONED}. */
  public String getSqlState() {
    return sqlState;
  }

  /**
   * Why the transaction was refused ({@link LeaseLostSQLException#reason()}): refused by the
   * database, lost locally, ...; the same whether the SQLState is {@value
   * LeaseLostSQLException#REFUSED} or {@value LeaseLostSQLException#POISONED}.
   */
  public LeaseLostSQLException.Reason reason() {
    return ((LeaseLostSQLException) getCause()).reason();
  }

  /** The lease the transaction ran under, if known. */
  public Optional<Lease> lease() {
    return Optional.ofNullable(((LeaseLostSQLException) getCause()).lease());
  }

  /**
   * The first lease-lost refusal ({@value LeaseLostSQLException#REFUSED} or {@value
   * LeaseLostSQLException#POISONED}) in {@code ex}'s causes, as this exception; null if none.
   */
  static LeaseLostDataAccessException find(String task, Throwable ex) {
    int depth = 0;
    for (Throwable c = ex; c != null && depth < 32; c = c.getCause(), depth++) {
      if (c instanceof LeaseLostDataAccessException found) {
        return found;
      }
      if (c instanceof LeaseLostSQLException lost && isLeaseLost(lost)) {
        return new LeaseLostDataAccessException(task == null ? "lease lost" : task, lost);
      }
      if (c instanceof SQLException sql) {
        for (SQLException next = sql.getNextException();
            next != null && depth < 32;
            next = next.getNextException(), depth++) {
          if (next instanceof LeaseLostSQLException lost && isLeaseLost(lost)) {
            return new LeaseLostDataAccessException(task == null ? "lease lost" : task, lost);
          }
        }
      }
    }
    return null;
  }

  private static boolean isLeaseLost(SQLException e) {
    return LeaseLostSQLException.REFUSED.equals(e.getSQLState())
        || LeaseLostSQLException.POISONED.equals(e.getSQLState());
  }
}
