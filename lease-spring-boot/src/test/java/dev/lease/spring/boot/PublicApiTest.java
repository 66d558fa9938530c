package dev.lease.spring.boot;

import dev.lease.testing.PublicApi;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The public API of lease-spring-boot is the checked-in {@code src/test/resources/public-api.txt}:
 * what applications use (the annotations, the listener and customizer interfaces, the properties,
 * the meters binder, the endpoint) and what Spring Boot needs public (the auto-configurations). The
 * machinery (interceptor, post-processors, health check, the Boot 3 and Boot 4 health indicators)
 * is package-private. It runs in lease-spring-boot-tests-boot3 and -boot4 with the same golden
 * file; the classes of the other Boot line's health indicator are package-private and never loaded.
 */
class PublicApiTest {

  @Test
  void publicApiIsTheCheckedInOne() {
    PublicApi.assertMatchesGolden(
        "lease-spring-boot",
        Path.of("../lease-spring-boot"),
        "lease-spring-boot-tests-boot3",
        Set.of());
  }
}
