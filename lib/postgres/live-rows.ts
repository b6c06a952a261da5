/**
 * The dedup capacity check without a count per reservation (docs/design.md#capacity-on-postgresql).
 * Counting the live dedup rows reads every unexpired index entry, dead versions
 * included, and grew to most of a reservation's cost (16 ms with 10,000 live rows against a
 * 0.72 ms durable commit). The capacity only bounds the table's size, so each replica keeps an
 * estimate instead and counts exactly, inside the reservation's own statement, only when:
 *
 * - it has no count yet (its first reservation),
 * - its estimate is at least half the capacity (near the limit: exact, as the contract suites
 *   check with small capacities), or
 * - its last count is more than a second old (other replicas' inserts become visible).
 *
 * The estimate is the last exact count plus this replica's own reservations since. It ignores
 * expiries and releases, so it only overestimates what this replica did; what it misses is the
 * other replicas' reservations since the last count: `cache_full` may come that late, at most
 * about a second's worth of their inserts past the capacity (racing replicas could always pass
 * it by the number racing). Time is the store's clock, so tests step it.
 */
import type { Clock } from '../clock.ts';

/** How old a count may get before the next reservation counts again. */
export const LIVE_ROWS_REFRESH_MS = 1_000;

export interface LiveRows {
  /** Whether the next reservation must count the live rows in its statement. */
  mustCount(): boolean;
  /**
   * What a reservation's statement returned: the live rows it counted (its snapshot), or null when
   * it did not count, and whether it inserted its row.
   */
  record(live: number | null, inserted: boolean): void;
}

export function createLiveRows(capacity: number, clock: Pick<Clock, 'now'>): LiveRows {
  let count = 0;
  let countedAt = Number.NaN; // no count yet
  let added = 0;
  return {
    mustCount() {
      const age = clock.now() - countedAt;
      // A clock that stepped backwards (age < 0) or no count yet (NaN) counts too.
      if (!(age >= 0 && age < LIVE_ROWS_REFRESH_MS)) return true;
      return 2 * (count + added) >= capacity;
    },
    record(live, inserted) {
      if (live === null) {
        if (inserted) added++;
        return;
      }
      count = live;
      added = inserted ? 1 : 0;
      countedAt = clock.now();
    },
  };
}
