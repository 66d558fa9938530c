package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Binding leases to threads: nested scopes restore the outer binding; the current term. */
class LeaseContextTest {

  private Fixture fixture;
  private Lease outer;
  private Lease inner;

  @BeforeEach
  void twoLeases() {
    // the context needs only lease objects; SQLite makes them cheaply
    fixture = new Fixture(TestDatabase.SQLITE);
    LeaseManager m = fixture.manager("context", LeaseTimings.DEFAULTS);
    outer = m.tryClaim("outer").orElseThrow();
    inner = m.tryClaim("inner").orElseThrow();
    inner.release();
    inner = m.tryClaim("inner").orElseThrow(); // the next term: the two terms differ
    assertTrue(inner.term() != outer.term());
  }

  @AfterEach
  void close() {
    fixture.close();
  }

  @Test
  void nestedScopesRestoreTheOuterBinding() {
    assertTrue(LeaseContext.current().isEmpty());
    assertNull(LeaseContext.currentOrNull());
    assertEquals(OptionalLong.empty(), LeaseContext.currentTerm());
    try (LeaseContext.Scope a = LeaseContext.bind(outer)) {
      assertSame(outer, LeaseContext.current().orElseThrow());
      assertEquals(OptionalLong.of(outer.term()), LeaseContext.currentTerm());
      try (LeaseContext.Scope b = LeaseContext.bind(inner)) {
        assertSame(inner, LeaseContext.currentOrNull());
        assertEquals(OptionalLong.of(inner.term()), LeaseContext.currentTerm());
        try (LeaseContext.Scope none = LeaseContext.unbind()) {
          assertTrue(LeaseContext.current().isEmpty());
          assertEquals(OptionalLong.empty(), LeaseContext.currentTerm());
        }
        assertSame(inner, LeaseContext.currentOrNull());
      }
      assertSame(outer, LeaseContext.currentOrNull(), "the outer binding is back");
      assertEquals(OptionalLong.of(outer.term()), LeaseContext.currentTerm());
    }
    assertNull(LeaseContext.currentOrNull(), "nothing bound after the outermost scope");
  }

  @Test
  void closingAScopeTwiceChangesNothing() {
    try (LeaseContext.Scope a = LeaseContext.bind(outer)) {
      LeaseContext.Scope b = LeaseContext.bind(inner);
      b.close();
      b.close();
      assertSame(outer, LeaseContext.currentOrNull());
    }
    assertNull(LeaseContext.currentOrNull());
  }

  @Test
  void bindingIsPerThread() throws Exception {
    try (LeaseContext.Scope a = LeaseContext.bind(outer)) {
      Lease seen =
          CompletableFuture.supplyAsync(LeaseContext::currentOrNull).get(5, TimeUnit.SECONDS);
      assertNull(seen, "another thread sees no lease");
      LeaseContext.Scope[] opened = new LeaseContext.Scope[1];
      Thread t = new Thread(() -> opened[0] = LeaseContext.bind(inner));
      t.start();
      t.join(5_000);
      IllegalStateException e = assertThrows(IllegalStateException.class, opened[0]::close);
      assertTrue(e.getMessage().contains("closed on the thread that opened it"), e.getMessage());
      assertSame(outer, LeaseContext.currentOrNull());
    }
  }

  @Test
  void bindingNullSaysWhatToDoInstead() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> LeaseContext.bind(null));
    assertTrue(e.getMessage().contains("unbind()"), e.getMessage());
  }
}
