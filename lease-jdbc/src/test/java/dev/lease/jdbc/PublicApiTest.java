package dev.lease.jdbc;

import dev.lease.testing.PublicApi;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The public API of lease-jdbc is the checked-in {@code src/test/resources/public-api.txt}: a
 * change to it fails here until the file is regenerated (the failure says how).
 */
class PublicApiTest {

  @Test
  void publicApiIsTheCheckedInOne() {
    PublicApi.assertMatchesGolden("lease-jdbc", Set.of("dev.lease.jdbc.internal"));
  }
}
