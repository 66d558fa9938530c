package dev.lease.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The {@code jdbc:fenced:} driver (checklist 30–32). */
class FencedDriverTest {

  @Test
  void isFoundThroughServiceLoaderAndDriverManager() throws SQLException {
    boolean listed =
        ServiceLoader.load(Driver.class).stream().anyMatch(p -> p.type() == FencedDriver.class);
    assertTrue(listed, "META-INF/services/java.sql.Driver");
    assertTrue(DriverManager.getDriver("jdbc:fenced:postgresql://x/y") instanceof FencedDriver);
    assertTrue(FencedDriver.isRegistered());
  }

  @Test
  void acceptsOnlyItsPrefixAndStripsItOnce() throws SQLException {
    FencedDriver d = new FencedDriver();
    assertTrue(d.acceptsURL("jdbc:fenced:postgresql://h/db"));
    assertFalse(d.acceptsURL("jdbc:postgresql://h/db"));
    assertFalse(d.acceptsURL(null));
    assertNull(
        d.connect("jdbc:postgresql://127.0.0.1/test", new Properties()),
        "a foreign URL gives null, as the Driver contract says");
    assertEquals(
        "jdbc:postgresql://h/db?x=fenced:",
        FencedDriver.realUrl("jdbc:fenced:postgresql://h/db?x=fenced:"));
    assertEquals(
        "jdbc:postgresql://h/db", FencedDriver.realUrl("jdbc:fenced:jdbc:postgresql://h/db"));
    SQLException e =
        assertThrows(
            SQLException.class,
            () -> d.connect("jdbc:fenced:fenced:postgresql://h/db", new Properties()));
    assertTrue(
        e.getMessage().contains("no JDBC driver accepts jdbc:fenced:postgresql"),
        "it never picks itself: " + e.getMessage());
    assertTrue(
        d.getPropertyInfo("jdbc:fenced:postgresql://h/db", new Properties()).length > 0,
        "getPropertyInfo asks the real driver with the real URL");
  }

  @OnEveryDatabase
  void connectsThroughTheRealDriverAndFences(TestDatabase db) throws SQLException {
    String url = db.url();
    try (Connection c = DriverManager.getConnection("jdbc:fenced:" + url.substring(5));
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1")) {
      assertTrue(FencedConnections.isFenced(c));
      assertTrue(rs.next());
    }
  }
}
