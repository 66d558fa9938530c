package org.apache.activemq;

import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

/**
 * An XA resource in a message broker's package (XaTrackingTest: brokers' branches are not
 * MySQL/MariaDB branches, so the agent's fail-closed rule for resources it cannot link exempts
 * them). Does nothing.
 */
public final class FakeBrokerResource implements XAResource {
  @Override
  public void start(Xid xid, int flags) {}

  @Override
  public void end(Xid xid, int flags) {}

  @Override
  public int prepare(Xid xid) {
    return XA_OK;
  }

  @Override
  public void commit(Xid xid, boolean onePhase) {}

  @Override
  public void rollback(Xid xid) {}

  @Override
  public void forget(Xid xid) {}

  @Override
  public Xid[] recover(int flag) {
    return new Xid[0];
  }

  @Override
  public boolean isSameRM(XAResource other) {
    return other == this;
  }

  @Override
  public int getTransactionTimeout() {
    return 0;
  }

  @Override
  public boolean setTransactionTimeout(int seconds) {
    return false;
  }
}
