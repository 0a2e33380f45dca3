// Brute-force protection: failure counters shared by every instance. One row per throttled key
// (`kind` says what the key is: a login name or a client address, for logins or reset requests).
import { index, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

export const loginThrottle = pgTable(
  "tessera_login_throttle",
  {
    kind: text("kind").notNull(),
    key: text("key").notNull(),
    failures: integer("failures").notNull(),
    lastFailureAt: timestamp("last_failure_at", { withTimezone: true, mode: "date" }).notNull(),
    lockedUntil: timestamp("locked_until", { withTimezone: true, mode: "date" }),
    /** `failures` when the current lock was set: tells the failure that set it (one event per lock). */
    lockedAtFailures: integer("locked_at_failures"),
  },
  (t) => [
    primaryKey({ columns: [t.kind, t.key] }),
    index("tessera_login_throttle_last_failure_idx").on(t.lastFailureAt),
  ],
);
