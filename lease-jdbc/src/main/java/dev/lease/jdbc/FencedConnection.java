package dev.lease.jdbc;

import java.sql.Connection;

/**
 * Marks a connection whose transactions are fenced. Detect one through any number of pool proxies
 * with {@code connection.isWrapperFor(FencedConnection.class)} (see {@link
 * FencedConnections#isFenced}).
 */
public interface FencedConnection extends Connection {}
