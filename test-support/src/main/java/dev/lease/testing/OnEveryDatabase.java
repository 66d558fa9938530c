package dev.lease.testing;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A test that takes a {@link TestDatabase} and runs once on every database the tests run on
 * (PostgreSQL, MariaDB through both drivers, SQLite) ({@link TestDatabase#all}), with the
 * database's name as its display name.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@ParameterizedTest(name = "{0}")
@MethodSource("dev.lease.testing.TestDatabase#all")
public @interface OnEveryDatabase {}
