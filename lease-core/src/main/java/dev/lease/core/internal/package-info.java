/**
 * Internal: what lease-core's own packages, lease-jdbc, lease-agent and the property tests need
 * from lease-core and applications must not call ({@link dev.lease.core.internal.LeaseInternals}),
 * and the test hooks of the manager's builder.
 *
 * <p><b>Not API.</b> Public only because other packages and modules of this project call it; it may
 * change in any release without notice. The public API test of each module lists this package
 * separately, marked internal.
 */
package dev.lease.core.internal;
