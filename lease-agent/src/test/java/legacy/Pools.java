package legacy;

import com.mchange.v2.c3p0.ComboPooledDataSource;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.agroal.api.AgroalDataSource;
import io.agroal.api.configuration.supplier.AgroalDataSourceConfigurationSupplier;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import oracle.ucp.jdbc.PoolDataSource;
import oracle.ucp.jdbc.PoolDataSourceFactory;
import org.apache.commons.dbcp2.BasicDataSource;
import org.apache.tomcat.jdbc.pool.PoolProperties;

/**
 * The connection pools legacy applications use, each configured as real deployments do: two
 * connections kept open, a validation query {@code SELECT 1} tested on borrow, and the pool's own
 * background thread (evictor, cleaner, idle test) running every 500 ms, so that every path where a
 * pool opens, tests or evicts connections on its own threads runs during a test.
 */
public final class Pools {

  /** The pools, by the name the tests pass on the command line. */
  public static final String[] NAMES = {"hikari", "dbcp2", "tomcat", "c3p0", "agroal", "ucp"};

  private static final String VALIDATION = "SELECT 1";

  private Pools() {}

  public static DataSource create(String pool, String url) throws SQLException {
    // each pool in a class of its own: the JVM loads a pool's classes only when that pool is used,
    // so the class path needs only the chosen pool's jars
    switch (pool) {
      case "hikari":
        return Hikari.create(url);
      case "dbcp2":
        return Dbcp2.create(url);
      case "tomcat":
        return Tomcat.create(url);
      case "c3p0":
        return C3p0.create(url);
      case "agroal":
        return Agroal.create(url);
      case "ucp":
        return Ucp.create(url);
      default:
        throw new IllegalArgumentException("unknown pool " + pool);
    }
  }

  private static final class Hikari {
    static DataSource create(String url) {
      HikariConfig cfg = new HikariConfig();
      cfg.setJdbcUrl(url);
      cfg.setMaximumPoolSize(2);
      cfg.setMinimumIdle(2);
      cfg.setConnectionTimeout(5_000);
      cfg.setConnectionTestQuery(VALIDATION); // instead of isValid(), as older configurations have
      cfg.setPoolName("legacy");
      return new HikariDataSource(cfg);
    }
  }

  private static final class Dbcp2 {
    static DataSource create(String url) {
      BasicDataSource ds = new BasicDataSource();
      ds.setUrl(url);
      ds.setInitialSize(2);
      ds.setMaxTotal(2);
      ds.setMinIdle(2);
      ds.setMaxWait(Duration.ofSeconds(5));
      ds.setValidationQuery(VALIDATION);
      ds.setTestOnBorrow(true);
      ds.setTestWhileIdle(true);
      ds.setDurationBetweenEvictionRuns(Duration.ofMillis(500)); // the evictor thread
      return ds;
    }
  }

  private static final class Tomcat {
    static DataSource create(String url) {
      PoolProperties p = new PoolProperties();
      p.setUrl(url);
      p.setInitialSize(2);
      p.setMaxActive(2);
      p.setMinIdle(2);
      p.setMaxIdle(2);
      p.setMaxWait(5_000);
      p.setValidationQuery(VALIDATION);
      p.setTestOnBorrow(true);
      p.setTestWhileIdle(true);
      p.setTimeBetweenEvictionRunsMillis(500); // the pool cleaner thread
      return new org.apache.tomcat.jdbc.pool.DataSource(p);
    }
  }

  private static final class C3p0 {
    static DataSource create(String url) {
      ComboPooledDataSource ds = new ComboPooledDataSource();
      ds.setJdbcUrl(url);
      ds.setInitialPoolSize(2);
      ds.setMinPoolSize(2);
      ds.setMaxPoolSize(2);
      ds.setCheckoutTimeout(5_000);
      ds.setPreferredTestQuery(VALIDATION);
      ds.setTestConnectionOnCheckout(true); // c3p0 0.10+ runs this test on its helper threads
      ds.setIdleConnectionTestPeriod(1);
      ds.setAcquireRetryAttempts(1);
      return ds;
    }
  }

  private static final class Agroal {
    static DataSource create(String url) throws SQLException {
      return AgroalDataSource.from(
          new AgroalDataSourceConfigurationSupplier()
              .connectionPoolConfiguration(
                  cp ->
                      cp.initialSize(2)
                          .minSize(2)
                          .maxSize(2)
                          .acquisitionTimeout(Duration.ofSeconds(5))
                          .validateOnBorrow(true)
                          .validationTimeout(Duration.ofMillis(500)) // the housekeeping thread
                          .connectionValidator(Pools::selectOne)
                          .connectionFactoryConfiguration(cf -> cf.jdbcUrl(url))));
    }
  }

  private static final class Ucp {
    static DataSource create(String url) throws SQLException {
      PoolDataSource ds = PoolDataSourceFactory.getPoolDataSource();
      ds.setConnectionFactoryClassName(driverClass(url));
      ds.setURL(url);
      ds.setInitialPoolSize(2);
      ds.setMinPoolSize(2);
      ds.setMaxPoolSize(2);
      ds.setConnectionWaitDuration(Duration.ofSeconds(5));
      ds.setValidateConnectionOnBorrow(true);
      ds.setSQLForValidateConnection(VALIDATION);
      ds.setTimeoutCheckInterval(1);
      return ds;
    }
  }

  /** The validation query as a connection validator (Agroal takes code, not SQL). */
  private static boolean selectOne(Connection c) {
    try (Statement s = c.createStatement()) {
      s.execute(VALIDATION);
      return true;
    } catch (SQLException e) {
      System.out.println("VALIDATION-FAILED " + e);
      return false;
    }
  }

  private static String driverClass(String url) {
    if (url.startsWith("jdbc:postgresql:")) {
      return "org.postgresql.Driver";
    }
    if (url.startsWith("jdbc:mariadb:")) {
      return "org.mariadb.jdbc.Driver";
    }
    if (url.startsWith("jdbc:mysql:")) {
      return "com.mysql.cj.jdbc.Driver";
    }
    return "org.sqlite.JDBC";
  }
}
