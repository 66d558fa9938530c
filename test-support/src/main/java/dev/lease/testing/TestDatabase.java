package dev.lease.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteDataSource;

/**
 * One of the four databases every database-backed test runs on. Its {@link #toString()} is the name
 * that goes into test display names: postgresql, mysql (MySQL Connector/J against MariaDB), mariadb
 * (MariaDB Connector/J against MariaDB) and sqlite.
 *
 * <p>Servers are found at the CI defaults (PostgreSQL 127.0.0.1:5432 database test user postgres;
 * MariaDB 127.0.0.1:3306 database test user root, empty password); override with the system
 * properties {@code lease.test.postgresql.url}, {@code lease.test.mysql.url} and {@code
 * lease.test.mariadb.url}.
 */
public enum TestDatabase {
  POSTGRESQL("postgresql", "jdbc:postgresql://127.0.0.1:5432/test?user=postgres"),
  MYSQL(
      "mysql",
      "jdbc:mysql://127.0.0.1:3306/test?user=root&password="
          + "&connectionTimeZone=LOCAL&characterEncoding=UTF-8"),
  MARIADB("mariadb", "jdbc:mariadb://127.0.0.1:3306/test?user=root&password="),
  SQLITE("sqlite", null);

  private static final AtomicInteger TABLES = new AtomicInteger();
  private static Path sqliteDir;

  private final String label;
  private final String defaultUrl;

  TestDatabase(String label, String defaultUrl) {
    this.label = label;
    this.defaultUrl = defaultUrl;
  }

  /** All four, for {@code @MethodSource}. */
  public static Stream<TestDatabase> all() {
    return Stream.of(values());
  }

  /** The three server databases (no SQLite). */
  public static Stream<TestDatabase> servers() {
    return Stream.of(POSTGRESQL, MYSQL, MARIADB);
  }

  /** MariaDB through MySQL Connector/J and through MariaDB Connector/J. */
  public static Stream<TestDatabase> mysqlFamily() {
    return Stream.of(MYSQL, MARIADB);
  }

  /** PostgreSQL alone, for what only PostgreSQL has. */
  public static Stream<TestDatabase> postgresql() {
    return Stream.of(POSTGRESQL);
  }

  public boolean isSqlite() {
    return this == SQLITE;
  }

  public boolean isMySqlFamily() {
    return this == MYSQL || this == MARIADB;
  }

  /** The JDBC URL of the test database; for SQLite a fresh file per call. */
  public String url() {
    if (this == SQLITE) {
      return "jdbc:sqlite:" + newSqliteFile();
    }
    return System.getProperty("lease.test." + label + ".url", defaultUrl);
  }

  /**
   * A pooled DataSource (HikariCP) on this database. For SQLite every call makes a new database
   * file in WAL mode with a busy timeout, so callers that need to share one file must share the
   * returned DataSource (or use {@link #sqliteDataSource(String)}).
   */
  public HikariDataSource pooled(int maxPoolSize) {
    HikariConfig cfg =
        poolConfig(
            maxPoolSize,
            label + "-" + TABLES.incrementAndGet(),
            this == SQLITE,
            this == SQLITE ? newSqliteFile() : url());
    cfg.setMinimumIdle(0);
    cfg.setConnectionTimeout(10_000);
    return new HikariDataSource(cfg);
  }

  /** A pool's configuration on a SQLite file ({@code sqlite}) or a server's JDBC URL. */
  private static HikariConfig poolConfig(
      int maxPoolSize, String poolName, boolean sqlite, String urlOrFile) {
    HikariConfig cfg = new HikariConfig();
    cfg.setMaximumPoolSize(maxPoolSize);
    cfg.setPoolName(poolName);
    if (sqlite) {
      cfg.setDataSource(sqliteDataSource(urlOrFile));
    } else {
      cfg.setJdbcUrl(urlOrFile);
    }
    return cfg;
  }

  /** An unpooled DataSource on this database (for SQLite, on a new file). */
  public DataSource unpooled() {
    if (this == SQLITE) {
      return sqliteDataSource(newSqliteFile());
    }
    return new UrlDataSource(url());
  }

  /**
   * A pool of four connections in a child process, on the database its arguments name: the label
   * ({@code sqlite} or a server's) and the JDBC URL, or for SQLite the database file.
   */
  public static HikariDataSource childPool(String label, String urlOrFile, String poolName) {
    return new HikariDataSource(poolConfig(4, poolName, "sqlite".equals(label), urlOrFile));
  }

  /** A SQLite DataSource on {@code file}: WAL journal, 10 s busy timeout. */
  public static SQLiteDataSource sqliteDataSource(String file) {
    SQLiteConfig config = new SQLiteConfig();
    config.setJournalMode(SQLiteConfig.JournalMode.WAL);
    config.setBusyTimeout(10_000);
    SQLiteDataSource ds = new SQLiteDataSource(config);
    ds.setUrl("jdbc:sqlite:" + file);
    return ds;
  }

  /** A table name no other test uses. */
  public static String uniqueTable(String prefix) {
    return (prefix + "_" + ProcessHandle.current().pid() + "_" + TABLES.incrementAndGet())
        .toLowerCase(Locale.ROOT);
  }

  /** Drops {@code tables} if they exist; ignores errors (tests clean up best effort). */
  public static void dropQuietly(DataSource ds, String... tables) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      for (String t : tables) {
        s.execute("DROP TABLE IF EXISTS " + t);
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      // best effort
    }
  }

  private static synchronized String newSqliteFile() {
    try {
      if (sqliteDir == null) {
        sqliteDir = Files.createTempDirectory("lease-sqlite-");
        sqliteDir.toFile().deleteOnExit();
      }
      Path file = sqliteDir.resolve("db-" + TABLES.incrementAndGet() + ".db");
      for (String suffix : List.of("", "-wal", "-shm")) {
        Path.of(file + suffix).toFile().deleteOnExit();
      }
      return file.toString();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public String toString() {
    return label;
  }
}
