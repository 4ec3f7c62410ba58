package org.litpath.local.mongo;

import org.slf4j.Logger;

/**
 * A log for events that any local user can cause without a password: failed authentications,
 * connections that send garbage. One line each would let them grow the log without bound, so at
 * most {@code burst} lines are written per period; the rest are only counted, and the count is
 * written as one line when the period ends ({@link #endPeriod}, called on a timer and at shutdown).
 * At most {@code burst + 1} lines per period, whatever the rate of events.
 */
final class ThrottledLog {

    private final Logger log;
    private final String events;
    private final int burst;
    private int written;
    private long suppressed;

    /** {@code events} names what is counted, in the plural ("refused authentications"). */
    ThrottledLog(Logger log, String events, int burst) {
        if (burst < 0) {
            throw new IllegalArgumentException("burst must be >= 0");
        }
        this.log = log;
        this.events = events;
        this.burst = burst;
    }

    synchronized void warn(String format, Object... arguments) {
        if (written < burst) {
            written++;
            log.warn(format, arguments);
        } else {
            suppressed++;
        }
    }

    /** Close the period: write how many events were not written one by one, and start counting anew. */
    synchronized void endPeriod() {
        if (suppressed > 0) {
            log.warn("{} more {} not logged one by one (at most {} lines per period)", suppressed, events, burst);
        }
        written = 0;
        suppressed = 0;
    }
}
