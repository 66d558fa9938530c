package dev.lease.spring.boot;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method under the lease {@link #value()}, once across replicas at a time.
 *
 * <p>Each call claims the lease without waiting. If another replica (or another call in this
 * replica) holds it, the method is <b>skipped</b>: its body does not run and it returns {@code
 * null}, {@code Optional.empty()}, or {@code false}/{@code 0} for primitives. If claimed, the lease
 * is kept renewed and bound to the calling thread ({@code LeaseContext}), so the transactions the
 * method runs through a fenced DataSource ({@code lease.fencing.enabled=true}) are verified by the
 * database; the lease is released when the method returns or throws, or, when the method runs
 * inside a Spring-managed transaction of its caller, once that transaction completed (what the
 * method wrote commits with it, so the commit must still be under the lease). If the lease is lost
 * while the method runs, the calling thread is interrupted, the method's open transaction is
 * refused, and the call ends with {@code LeaseLostException} (even if the method returned
 * normally), since what it did may be incomplete. A call of a method whose lease the thread already
 * holds just runs.
 *
 * <p>The name is a template: {@code ${...}} placeholders are resolved from the environment, and
 * {@code #{...}} expressions are SpEL evaluated with the method's arguments ({@code #name}, {@code
 * #p0}, {@code #a0}) and the bean as root object:
 *
 * <pre>{@code
 * @Leased("nightly-billing")              void billing() { ... }
 * @Leased("${app.region}-report")        void report() { ... }
 * @Leased("invoice-#{#invoice.id}")       void pay(Invoice invoice) { ... }
 * }</pre>
 *
 * <p>The interceptor runs outside {@code @Transactional} (it has a higher precedence), so a method
 * that has both binds its lease before the transaction begins and releases it after it ends; if it
 * joins a transaction of its caller, the lease stays held and bound until that one ends.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Leased {

  /** The lease's name: a template with {@code ${...}} placeholders and {@code #{...}} SpEL. */
  String value();
}
