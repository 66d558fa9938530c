package dev.lease.jdbc.internal.fence;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * What a JDBC object handed out by a fenced connection knows of that connection: its fence, the
 * fenced {@code Connection} its {@code getConnection()} returns, and how to wrap what it returns in
 * turn (a driver statement reached from a result set, a driver object among its values). The faces
 * get this, not {@link FencingConnection}, so the objects a connection hands out name none of the
 * faces above them (docs/code.md, "The fence's layers"); {@link FencingConnection} implements it
 * for its own objects.
 */
interface ParentConnection {

  /** The fence of the connection: every statement and write of its objects goes through it. */
  TransactionFence fence();

  /** The fenced connection, as {@code getConnection()} returns it (never the driver's). */
  Connection jdbc();

  /** A driver statement reached from one of the connection's objects, fenced. */
  Statement statement(Statement driver);

  /** {@code value} with every driver object it is or holds wrapped ({@link DriverObjects#wrap}). */
  Object wrap(Object value);

  /** {@link DriverObjects#wrap(ParentConnection, Object, Class)}. */
  <T> T wrap(T value, Class<T> type) throws SQLException;

  /** False only for negative controls ({@code FenceRules.wrapsDriverObjects}): values are raw. */
  boolean wrapsDriverObjects();
}
