package legacy;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

/**
 * An {@code XAResource} whose every call does nothing and succeeds (prepare votes {@code XA_OK},
 * recover finds nothing): the tests' stubs implement it and override only what they record.
 */
public interface QuietXaResource extends XAResource {
  @Override
  default void start(Xid xid, int flags) throws XAException {}

  @Override
  default void end(Xid xid, int flags) throws XAException {}

  @Override
  default int prepare(Xid xid) throws XAException {
    return XA_OK;
  }

  @Override
  default void commit(Xid xid, boolean onePhase) throws XAException {}

  @Override
  default void rollback(Xid xid) throws XAException {}

  @Override
  default void forget(Xid xid) throws XAException {}

  @Override
  default Xid[] recover(int flag) throws XAException {
    return new Xid[0];
  }

  @Override
  default boolean isSameRM(XAResource other) throws XAException {
    return other == this;
  }

  @Override
  default int getTransactionTimeout() throws XAException {
    return 0;
  }

  @Override
  default boolean setTransactionTimeout(int seconds) throws XAException {
    return false;
  }
}
