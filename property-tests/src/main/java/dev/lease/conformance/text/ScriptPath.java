package dev.lease.conformance.text;

import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;

/** Every way a script's SQL reaches the driver. */
public enum ScriptPath {
  /** The whole text through {@code Statement.execute}. */
  EXECUTE(true),
  /** The whole text through {@code Statement.executeUpdate} (sqlite-jdbc runs every statement). */
  EXECUTE_UPDATE(true),
  /** The whole text through {@code Statement.executeLargeUpdate}. */
  EXECUTE_LARGE_UPDATE(true),
  /** The whole text prepared ({@code Connection.prepareStatement}) and executed. */
  PREPARED(true),
  /** The whole text through {@code Connection.prepareCall}. */
  CALLABLE(true),
  /** Each statement as an entry of one {@code addBatch}/{@code executeBatch}. */
  BATCH(false),
  /** Each statement through its own {@code Statement.execute}, as applications send them. */
  ONE_BY_ONE(false),
  /** Each statement prepared and executed on its own. */
  ONE_BY_ONE_PREPARED(false);

  private final boolean wholeText;

  ScriptPath(boolean wholeText) {
    this.wholeText = wholeText;
  }

  /** True when the script goes to the driver as one text. */
  public boolean wholeText() {
    return wholeText;
  }

  /**
   * Sends {@code script} on {@code c}; returns how many of its statements the fence let through to
   * the driver before one failed ({@code onEach} is told before each send). A driver or fence error
   * ends the script: the exception is returned, not thrown.
   */
  public SQLException send(Connection c, Script script, Runnable beforeEach) {
    try {
      switch (this) {
        case EXECUTE:
          try (Statement s = c.createStatement()) {
            beforeEach.run();
            s.execute(script.text());
          }
          break;
        case EXECUTE_UPDATE:
          try (Statement s = c.createStatement()) {
            beforeEach.run();
            s.executeUpdate(script.text());
          }
          break;
        case EXECUTE_LARGE_UPDATE:
          try (Statement s = c.createStatement()) {
            beforeEach.run();
            s.executeLargeUpdate(script.text());
          }
          break;
        case PREPARED:
          try (PreparedStatement ps = c.prepareStatement(script.text())) {
            beforeEach.run();
            ps.execute();
          }
          break;
        case CALLABLE:
          try (CallableStatement cs = c.prepareCall(script.text())) {
            beforeEach.run();
            cs.execute();
          }
          break;
        case BATCH:
          try (Statement s = c.createStatement()) {
            for (ScriptStatement st : script.statements()) {
              s.addBatch(st.sql());
            }
            beforeEach.run();
            s.executeBatch();
          }
          break;
        case ONE_BY_ONE:
          try (Statement s = c.createStatement()) {
            for (ScriptStatement st : script.statements()) {
              beforeEach.run();
              s.execute(st.sql());
            }
          }
          break;
        case ONE_BY_ONE_PREPARED:
          for (ScriptStatement st : script.statements()) {
            try (PreparedStatement ps = c.prepareStatement(st.sql())) {
              beforeEach.run();
              ps.execute();
            }
          }
          break;
        default:
          throw new IllegalStateException(toString());
      }
      if (!script.autoCommit()) {
        c.commit();
      }
      return null;
    } catch (SQLException e) {
      return e;
    }
  }
}
