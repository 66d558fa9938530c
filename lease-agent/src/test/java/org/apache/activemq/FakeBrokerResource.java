package org.apache.activemq;

/**
 * An XA resource in a message broker's package (XaTrackingTest: brokers' branches are not
 * MySQL/MariaDB branches, so the agent's fail-closed rule for resources it cannot link exempts
 * them). Does nothing.
 */
public final class FakeBrokerResource implements legacy.QuietXaResource {}
