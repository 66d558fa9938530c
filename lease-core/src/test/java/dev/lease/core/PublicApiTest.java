package dev.lease.core;

import dev.lease.testing.PublicApi;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The public API of lease-core is the checked-in {@code src/test/resources/public-api.txt}: a
 * change to it fails here until the file is regenerated (the failure says how), so the API changes
 * only on purpose and every change shows in review. {@code internal} and {@code dialect} are listed
 * apart, marked internal.
 */
class PublicApiTest {

  @Test
  void publicApiIsTheCheckedInOne() {
    PublicApi.assertMatchesGolden(
        "lease-core", Set.of("dev.lease.core.internal", "dev.lease.core.dialect"));
  }
}
