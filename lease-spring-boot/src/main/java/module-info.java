/**
 * The Spring Boot starter: leases, fencing, {@code @Leased} and {@code @LeaseScheduled} configured
 * from {@code lease.*} properties. Open: Spring reads and proxies its configuration classes by
 * reflection. What the application may lack (transactions, JDBC and JPA exception translation,
 * Micrometer, the actuator, Spring Boot 4's health types) is optional here as in the POM.
 */
open module dev.lease.spring.boot {
  requires transitive dev.lease.jdbc;
  requires transitive dev.lease.core;
  requires org.slf4j;
  requires spring.aop;
  requires spring.beans;
  requires spring.boot;
  requires spring.boot.autoconfigure;
  requires spring.context;
  requires spring.core;
  requires spring.expression;
  requires static spring.jdbc;
  requires static spring.orm;
  requires static spring.tx;
  requires static jakarta.persistence;
  requires static micrometer.core;
  requires static spring.boot.actuator;
  requires static spring.boot.health;

  exports dev.lease.spring.boot;
}
