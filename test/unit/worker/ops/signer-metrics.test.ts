/**
 * The transaction senders' events as log lines and metrics (lib/worker/ops/signer-metrics.ts,
 * docs/transactions.md#gaps): one info line per event with the chain, signer, nonce, hash, fees (as
 * decimal strings) and message; re-broadcasts, replacements by reason and gaps healed by how
 * counted; the age of each signer's lowest open nonce read at scrape time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from '../../../../lib/log.ts';
import { createMetricsRegistry } from '../../../../lib/node/metrics.ts';
import { createSignerReporter } from '../../../../lib/worker/ops/signer-metrics.ts';

const SIGNER = `0x${'a1'.repeat(20)}`;
const HASH = `0x${'b2'.repeat(32)}` as const;
const MESSAGE = `0x${'c3'.repeat(32)}`;

test('docs/transactions.md#gaps: each sender event is one info line and counted; the lowest open nonce age is a gauge', () => {
  const lines: [string, Record<string, unknown> | undefined][] = [];
  const logger: Logger = {
    debug: () => {},
    info: (msg, fields) => void lines.push([msg, fields]),
    warn: () => {},
    error: () => {},
  };
  const registry = createMetricsRegistry();
  const reporter = createSignerReporter(registry, logger);
  let open: { nonce: number; ageMs: number } | undefined = { nonce: 7, ageMs: 12_400 };
  reporter.watch({ destination: 'anvil2', signer: SIGNER, lowestOpen: () => open });
  const emit = reporter.onEvent('anvil2');
  const base = { chainId: 31337, signer: SIGNER, nonce: 7 };
  const fees = { maxFeePerGas: 3_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
  emit({ kind: 'broadcast', ...base, hash: HASH, ...fees, messageId: MESSAGE });
  emit({ kind: 'gap', ...base, messageId: MESSAGE, reason: 'the node holds none of its transactions' });
  emit({ kind: 'rebroadcast', ...base, hash: HASH, ...fees, messageId: MESSAGE });
  emit({ kind: 'replacement', ...base, hash: HASH, ...fees, messageId: MESSAGE, reason: 'gap' });
  emit({ kind: 'replacement', ...base, hash: HASH, ...fees, messageId: MESSAGE, reason: 'blocks' });
  emit({ kind: 'fill', ...base, nonce: 6, hash: HASH, ...fees });

  assert.deepEqual(
    lines.map(([msg]) => msg),
    ['broadcast', 'gap', 're-broadcast', 'replacement', 'replacement', 'gap filled'],
  );
  assert.deepEqual(lines[2][1], {
    destination: 'anvil2',
    chain_id: 31337,
    signer: SIGNER,
    nonce: 7,
    tx_hash: HASH,
    max_fee_per_gas: '3000000000',
    max_priority_fee_per_gas: '1000000000',
    message_id: MESSAGE,
  });
  assert.equal(lines[5][1]?.message_id, undefined, 'a self-transfer delivers no message');
  const text = registry.render();
  const value = (series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? undefined : Number(line.split(' ').pop());
  };
  assert.equal(value('relayer_worker_rebroadcasts_total{destination="anvil2"}'), 1);
  assert.equal(value('relayer_worker_replacements_total{destination="anvil2",reason="gap"}'), 1);
  assert.equal(value('relayer_worker_replacements_total{destination="anvil2",reason="blocks"}'), 1);
  assert.equal(value('relayer_worker_gaps_healed_total{by="rebroadcast",destination="anvil2"}'), 1);
  assert.equal(value('relayer_worker_gaps_healed_total{by="replacement",destination="anvil2"}'), 1);
  assert.equal(value('relayer_worker_gaps_healed_total{by="self-transfer",destination="anvil2"}'), 1);
  const age = `relayer_worker_lowest_open_nonce_age_seconds{destination="anvil2",signer="${SIGNER}"}`;
  assert.equal(value(age), 12);
  open = undefined;
  const again = registry
    .render()
    .split('\n')
    .find((l) => l.startsWith(age));
  assert.equal(again, `${age} 0`, 'read at scrape time: nothing open now, 0');
});
