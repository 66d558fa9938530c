package dev.lease.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * How the fence learns where the transaction is, as a strategy: {@link #ASKED} of the driver, in
 * production ({@link SessionView}). {@link #IGNORED} is a negative control ({@link
 * Weakening#NO_DRIVER_SESSION}), chosen in {@link FencingOptions}.
 */
abstract class DriverSessions {

  /** The driver is asked ({@link DriverSession}); SQLite's lost transaction is put back. */
  static final DriverSessions ASKED =
      new DriverSessions("asked") {
        @Override
        DriverSession lookUp(Connection delegate) {
          return DriverSession.of(delegate);
        }

        @Override
        void restoreSqliteTransaction(Connection delegate) throws SQLException {
          try (Statement s = delegate.createStatement()) {
            s.execute("BEGIN");
          } catch (SQLException e) {
            if (!String.valueOf(e.getMessage()).contains("within a transaction")) {
              throw e;
            }
          }
        }
      };

  /** The driver's view is ignored: nothing is known, nothing is repaired. */
  static final DriverSessions IGNORED =
      new DriverSessions("ignored") {
        @Override
        DriverSession lookUp(Connection delegate) {
          return DriverSession.UNKNOWN;
        }

        @Override
        void restoreSqliteTransaction(Connection delegate) {}
      };

  private final String name;

  private DriverSessions(String name) {
    this.name = name;
  }

  /** What the driver under {@code delegate} knows of the session; never fails. */
  abstract DriverSession lookUp(Connection delegate);

  /**
   * SQLite: a BEGIN puts back the transaction sqlite-jdbc believes in (or fails: one is open); see
   * {@link SessionView#ensureSqliteTransaction}.
   */
  abstract void restoreSqliteTransaction(Connection delegate) throws SQLException;

  @Override
  public String toString() {
    return name;
  }
}
