/**
 * One naming pattern for the engines (README, "Embedding the library"): `open…Store` opens a
 * database, `create…` builds an in-process engine. The former names stay for one release as the
 * same functions, and relayer-api/client's FetchFunction is the core's FetchLike.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as core from '../../lib/index.ts';
import type { FetchFunction, FetchLike as ClientFetchLike } from '../../lib/client/index.ts';
import * as sqlite from '../../lib/sqlite/index.ts';
import type { FetchLike } from '../../lib/rpc/client.ts';

test('the deprecated engine names are the renamed functions themselves', () => {
  assert.equal(typeof sqlite.openSqliteStore, 'function');
  assert.equal(sqlite.openStore, sqlite.openSqliteStore);
  assert.equal(typeof core.createMemoryDedupStore, 'function');
  assert.equal(core.createDedupCache, core.createMemoryDedupStore);
});

test('FetchLike and FetchFunction are one type (checked by the typecheck)', () => {
  const same = <A, B extends A>(check: A extends B ? true : false) => check;
  assert.equal(same<FetchLike, FetchFunction>(true), true);
  assert.equal(same<FetchLike, ClientFetchLike>(true), true);
});
