/**
 * The SQLite store's change watcher (docs/outbox.md#change-feed), run by its worker thread: what
 * changed in the outbox since the last look, whoever committed it. `PRAGMA data_version` changes
 * when another connection (a relayer-worker process, another server on the same file) commits; the
 * store's own commits do not change it, so the worker looks again after each of its own write
 * groups. A look reads the rows whose change version passed the cursor (schema migration 6 gives
 * every changed row the next number of one counter), through the version index.
 */
import type { DatabaseSync } from 'node:sqlite';
import { txKey } from '../outbox/change-feed.ts';

/** Rows read per query; a larger change is read in several. */
const PAGE = 1_000;

export interface ChangeWatcher {
  /** Whether another connection committed since the last call (PRAGMA data_version moved). */
  othersCommitted(): boolean;
  /** The messages changed since the last scan (ids, and the transactions of messages new to it). */
  scan(): { ids: string[]; txs: string[] };
}

export function createChangeWatcher(db: DatabaseSync): ChangeWatcher {
  const dataVersion = db.prepare('PRAGMA data_version');
  const readDataVersion = () => Number((dataVersion.get() as { data_version: number }).data_version);
  const since = db.prepare(
    'SELECT id, origin_chain, tx_hash, version, attempts, status FROM outbox WHERE version > ? ORDER BY version LIMIT ?',
  );
  let seen = readDataVersion();
  let cursor = Number((db.prepare('SELECT coalesce(max(version), 0) AS v FROM outbox').get() as { v: number }).v);
  return {
    othersCommitted() {
      const now = readDataVersion();
      if (now === seen) return false;
      seen = now;
      return true;
    },
    scan() {
      const ids: string[] = [];
      const txs = new Set<string>();
      for (;;) {
        const rows = since.all(cursor, PAGE) as unknown as {
          id: string;
          origin_chain: string;
          tx_hash: string;
          version: number;
          attempts: number;
          status: string;
        }[];
        for (const row of rows) {
          ids.push(row.id);
          // Never claimed yet: new to the outbox (a requeued message has attempts).
          if (row.status === 'queued' && row.attempts === 0) txs.add(txKey(row.origin_chain, row.tx_hash));
          cursor = row.version;
        }
        if (rows.length < PAGE) break;
      }
      return { ids, txs: [...txs] };
    },
  };
}
