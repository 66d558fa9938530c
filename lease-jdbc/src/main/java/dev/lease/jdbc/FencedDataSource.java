package dev.lease.jdbc;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.ConnectionBuilder;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.ShardingKey;
import java.sql.ShardingKeyBuilder;
import java.util.Objects;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A DataSource whose connections fence every transaction opened while a lease is bound to the
 * executing thread ({@link dev.lease.core.LeaseContext}): the first statement of the transaction
 * verifies with the database that this holder still holds the lease at its term, and in {@link
 * FencingMode#STRICT} (the default) makes the next holder's claim wait until the transaction ends.
 * With no lease bound the connections pass every call through.
 *
 * <pre>{@code
 * DataSource fenced = FencedDataSource.wrap(hikariDataSource);
 * try (LeaseContext.Scope scope = LeaseContext.bind(lease);
 *      Connection c = fenced.getConnection()) {
 *   c.setAutoCommit(false);
 *   ... // the first statement verifies the lease; a lost lease throws LeaseLostSQLException
 *   c.commit();
 * }
 * }</pre>
 *
 * <p>The lease table must live in the database this DataSource connects to: the verify runs inside
 * the application's own transaction. {@code unwrap}/{@code isWrapperFor} reach the wrapped
 * DataSource for types this class does not implement, so Spring Boot's {@code DataSourceUnwrapper}
 * and pool metrics still find a {@code HikariDataSource} underneath.
 */
public final class FencedDataSource implements DataSource {

  private final DataSource target;
  private final FencingOptions options;

  private FencedDataSource(DataSource target, FencingOptions options) {
    this.target = target;
    this.options = options;
  }

  /** Wraps {@code target} with {@link FencingOptions#defaults()}. */
  public static FencedDataSource wrap(DataSource target) {
    return wrap(target, FencingOptions.defaults());
  }

  /** Wraps {@code target}; a target that already is a {@code FencedDataSource} gets a new view. */
  public static FencedDataSource wrap(DataSource target, FencingOptions options) {
    Objects.requireNonNull(target, "target DataSource");
    Objects.requireNonNull(options, "options");
    if (target instanceof FencedDataSource) {
      return new FencedDataSource(((FencedDataSource) target).target, options);
    }
    return new FencedDataSource(target, options);
  }

  public FencingOptions options() {
    return options;
  }

  /** The wrapped DataSource. */
  public DataSource target() {
    return target;
  }

  @Override
  public Connection getConnection() throws SQLException {
    return FencedConnections.wrapForDataSource(target.getConnection(), options);
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return FencedConnections.wrapForDataSource(target.getConnection(username, password), options);
  }

  @Override
  public ConnectionBuilder createConnectionBuilder() throws SQLException {
    ConnectionBuilder inner = target.createConnectionBuilder();
    return new ConnectionBuilder() {
      @Override
      public ConnectionBuilder user(String username) {
        inner.user(username);
        return this;
      }

      @Override
      public ConnectionBuilder password(String password) {
        inner.password(password);
        return this;
      }

      @Override
      public ConnectionBuilder shardingKey(ShardingKey shardingKey) {
        inner.shardingKey(shardingKey);
        return this;
      }

      @Override
      public ConnectionBuilder superShardingKey(ShardingKey superShardingKey) {
        inner.superShardingKey(superShardingKey);
        return this;
      }

      @Override
      public Connection build() throws SQLException {
        return FencedConnections.wrap(inner.build(), options);
      }
    };
  }

  @Override
  public ShardingKeyBuilder createShardingKeyBuilder() throws SQLException {
    return target.createShardingKeyBuilder();
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return target.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    target.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    target.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return target.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return target.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    if (iface.isInstance(this)) {
      return iface.cast(this);
    }
    if (iface.isInstance(target)) {
      return iface.cast(target);
    }
    return target.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || iface.isInstance(target) || target.isWrapperFor(iface);
  }

  @Override
  public String toString() {
    return "FencedDataSource[" + target + ", " + options + "]";
  }
}
