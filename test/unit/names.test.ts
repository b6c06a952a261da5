/**
 * One naming pattern for the engines (README, "Embedding the library"): `open…Store` opens a
 * database, `create…` builds an in-process engine; relayer-api/client's injected `fetch` type is the
 * core's FetchLike. The former names were removed before 1.0 (CHANGELOG.md).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FetchLike as ClientFetchLike } from '../../lib/client/index.ts';
import * as core from '../../lib/index.ts';
import { createMemoryOutbox } from '../../lib/outbox/memory/outbox.ts';
import type { FetchLike } from '../../lib/rpc/client.ts';
import * as sqlite from '../../lib/sqlite/index.ts';
import { createFakeClock } from '../helpers/fakes/clock.ts';

test('the engines have one name each: the former openStore and createDedupCache are gone', () => {
  assert.equal(typeof sqlite.openSqliteStore, 'function');
  assert.equal(typeof core.createMemoryDedupStore, 'function');
  assert.ok(!('openStore' in sqlite), 'relayer-api/sqlite exports no openStore');
  assert.ok(!('createDedupCache' in core), 'relayer-api exports no createDedupCache');
});

test('createMemoryOutbox takes its options object only (checked by the typecheck)', () => {
  const clock = createFakeClock(1_000);
  // @ts-expect-error the positional clock is gone (CHANGELOG.md): the typecheck fails if it comes back
  const positional = () => createMemoryOutbox(clock);
  assert.equal(typeof positional, 'function');
  assert.equal(typeof createMemoryOutbox({ clock }).claim, 'function');
});

test('FetchLike is one type in the core and relayer-api/client (checked by the typecheck)', () => {
  const same = <A, B extends A>(check: A extends B ? true : false) => check;
  assert.equal(same<FetchLike, ClientFetchLike>(true), true);
});
