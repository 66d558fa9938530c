package dev.lease.conformance;

import dev.lease.core.internal.DriverManagerDataSource;
import java.net.URI;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The database a conformance run checks: a JDBC URL with an optional user and password. Its label
 * follows the driver, as the CI databases are named: postgresql, mysql (MySQL Connector/J), mariadb
 * (MariaDB Connector/J), sqlite.
 */
public final class Target {

  /** host:port after {@code //}, as pgjdbc, Connector/J and MariaDB Connector/J write it. */
  private static final Pattern HOST_PORT =
      Pattern.compile("^(jdbc:(?:postgresql|mysql|mariadb)://)([^/:?,]+)(?::(\\d+))?(.*)$");

  private static final SecureRandom RANDOM = new SecureRandom();

  private final String url;
  private final String user;
  private final String password;

  /** Every table of this run starts with it, so leftovers are found and only ours are dropped. */
  private final String tablePrefix;

  private final AtomicInteger tables = new AtomicInteger();

  public Target(String url, String user, String password) {
    this(
        url,
        user,
        password,
        "lc_" + Integer.toHexString(RANDOM.nextInt(1 << 24) | (1 << 24)).substring(1) + "_");
  }

  /**
   * @param tablePrefix the prefix of every table this run creates: lower-case letters, digits, _
   */
  public Target(String url, String user, String password, String tablePrefix) {
    if (!tablePrefix.matches("[a-z][a-z0-9_]{0,20}")) {
      throw new IllegalArgumentException(
          "table prefix " + tablePrefix + " is not a short identifier");
    }
    this.url = url;
    this.user = user;
    this.password = password;
    this.tablePrefix = tablePrefix;
  }

  public String user() {
    return user;
  }

  public String password() {
    return password;
  }

  /** A table name of this run, unique within it. */
  public String newTable(String purpose) {
    return tablePrefix + purpose + "_" + tables.incrementAndGet();
  }

  public String tablePrefix() {
    return tablePrefix;
  }

  /** Drops {@code tables} if they exist, best effort: what a property does when it ends. */
  public void dropQuietly(String... names) {
    try (Connection c = connect();
        Statement s = c.createStatement()) {
      for (String t : names) {
        try {
          s.execute("DROP TABLE IF EXISTS " + t);
        } catch (SQLException e) {
          // keep dropping the others
        }
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      // best effort: the runner's final sweep tries again
    }
  }

  public String url() {
    return url;
  }

  /** postgresql, mysql, mariadb, sqlite, or the URL's subprotocol for anything else. */
  public String label() {
    String rest = url.startsWith("jdbc:") ? url.substring(5) : url;
    int colon = rest.indexOf(':');
    return (colon < 0 ? rest : rest.substring(0, colon)).toLowerCase(Locale.ROOT);
  }

  public boolean isSqlite() {
    return label().equals("sqlite");
  }

  public boolean isPostgres() {
    return label().equals("postgresql");
  }

  public boolean isMySqlFamily() {
    return label().equals("mysql") || label().equals("mariadb");
  }

  public Connection connect() throws SQLException {
    return dataSource().getConnection();
  }

  /** An unpooled DataSource: every getConnection opens a new session (a new process would). */
  public DataSource dataSource() {
    return dataSource(url);
  }

  /** The same database reached at {@code 127.0.0.1:port} instead (through a loopback proxy). */
  public DataSource dataSourceAt(int port) {
    Matcher m = HOST_PORT.matcher(url);
    if (!m.matches()) {
      throw new IllegalStateException("no host:port in " + url);
    }
    return dataSource(m.group(1) + "127.0.0.1:" + port + m.group(4));
  }

  /**
   * Host and port of a server database on a loopback address, which the fault runs may put a proxy
   * in front of; empty for SQLite and for remote servers (the proxy only ever listens and connects
   * on loopback).
   */
  public Optional<URI> loopbackServer() {
    Matcher m = HOST_PORT.matcher(url);
    if (!m.matches()) {
      return Optional.empty();
    }
    String host = m.group(2);
    if (!(host.equals("127.0.0.1") || host.equals("localhost") || host.equals("[::1]"))) {
      return Optional.empty();
    }
    int port = m.group(3) != null ? Integer.parseInt(m.group(3)) : isPostgres() ? 5432 : 3306;
    return Optional.of(URI.create("tcp://127.0.0.1:" + port));
  }

  private DataSource dataSource(String jdbcUrl) {
    return new DriverManagerDataSource(jdbcUrl, user, password);
  }

  @Override
  public String toString() {
    return label() + " (" + url.replaceAll("(?i)password=[^&;]*", "password=***") + ")";
  }
}
