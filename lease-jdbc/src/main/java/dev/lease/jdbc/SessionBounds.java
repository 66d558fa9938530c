package dev.lease.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * Applies STRICT's session bounds (MySQL/MariaDB lock wait and idle-in-transaction timeouts) once
 * per physical connection. A wrapper outside a pool lives for one borrow, so the physical
 * connection (reached through the pool's {@code unwrap(Connection.class)}) is remembered in a weak
 * map: no strong reference keeps a closed connection alive (checklist 28).
 */
final class SessionBounds {

  private static final Map<Connection, List<String>> APPLIED =
      Collections.synchronizedMap(new WeakHashMap<>());

  private SessionBounds() {}

  static void apply(Connection connection, List<String> statements) throws SQLException {
    Connection physical = physical(connection);
    if (statements.equals(APPLIED.get(physical))) {
      return;
    }
    try (Statement s = connection.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    }
    APPLIED.put(physical, statements);
  }

  private static Connection physical(Connection c) {
    try {
      Connection inner = c.unwrap(Connection.class);
      return inner != null ? inner : c;
    } catch (SQLException | RuntimeException e) {
      return c;
    }
  }
}
