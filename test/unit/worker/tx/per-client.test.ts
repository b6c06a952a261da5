/**
 * State shared per node client and key (lib/worker/tx/per-client.ts): what the sender keeps for one
 * client (a signer's nonce book, the head watcher, the fee suggestion) is made once per client and
 * key and handed to every later caller, and never shared with another client or another key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { perClient } from '../../../../lib/worker/tx/per-client.ts';

test('perClient: made once per client and key, the same value after; other clients and keys get their own', () => {
  const state = perClient<string, { n: number }>();
  let made = 0;
  const make = () => ({ n: ++made });
  const a = {};
  const b = {};
  const first = state(a, 'signer-1', make);
  assert.equal(state(a, 'signer-1', make), first);
  assert.equal(made, 1, 'made once');
  assert.deepEqual(state(a, 'signer-2', make), { n: 2 }, 'another key of the same client');
  assert.deepEqual(state(b, 'signer-1', make), { n: 3 }, 'the same key of another client');
  assert.equal(state(a, 'signer-1', make), first, 'the first client’s first key unchanged');
  assert.equal(state(a, 'signer-2', make).n, 2);
  assert.equal(made, 3);
  // Another registry shares nothing with this one.
  assert.deepEqual(perClient<string, { n: number }>()(a, 'signer-1', make), { n: 4 });
});
