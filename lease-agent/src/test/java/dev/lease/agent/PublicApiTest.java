package dev.lease.agent;

import dev.lease.testing.PublicApi;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The public types of lease-agent are the checked-in {@code src/test/resources/public-api.txt}: a
 * change fails here until the file is regenerated (the failure says how). The agent's interface is
 * its command line and configuration; its public classes are public for the instrumented code and
 * the JVM (premain), and this keeps that set from growing by accident.
 */
class PublicApiTest {

  @Test
  void publicApiIsTheCheckedInOne() {
    PublicApi.assertMatchesGolden("lease-agent", Set.of());
  }
}
