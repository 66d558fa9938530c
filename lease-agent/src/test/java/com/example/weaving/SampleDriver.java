package com.example.weaving;

import java.sql.Connection;
import java.sql.DriverPropertyInfo;
import java.util.Properties;
import java.util.logging.Logger;

/**
 * A JDBC class outside the agent's packages (which the transformer ignores by name), for {@code
 * ClassWeaverTest}: its class file mentions {@code java/sql/}.
 */
public final class SampleDriver implements java.sql.Driver {
  @Override
  public Connection connect(String url, Properties info) {
    return null;
  }

  @Override
  public boolean acceptsURL(String url) {
    return false;
  }

  @Override
  public DriverPropertyInfo[] getPropertyInfo(String url, Properties info) {
    return new DriverPropertyInfo[0];
  }

  @Override
  public int getMajorVersion() {
    return 1;
  }

  @Override
  public int getMinorVersion() {
    return 0;
  }

  @Override
  public boolean jdbcCompliant() {
    return false;
  }

  @Override
  public Logger getParentLogger() {
    return null;
  }
}
