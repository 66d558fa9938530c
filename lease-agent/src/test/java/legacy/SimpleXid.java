package legacy;

import java.nio.charset.StandardCharsets;
import javax.transaction.xa.Xid;

/** A transaction manager's transaction id: format 4660, the given global id, branch 1. */
public final class SimpleXid implements Xid {
  private final String id;
  private final byte[] gtrid;

  public SimpleXid(String id) {
    this.id = id;
    this.gtrid = id.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public int getFormatId() {
    return 4660;
  }

  @Override
  public byte[] getGlobalTransactionId() {
    return gtrid;
  }

  @Override
  public byte[] getBranchQualifier() {
    return new byte[] {1};
  }

  @Override
  public String toString() {
    return id;
  }
}
