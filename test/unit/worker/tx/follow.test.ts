/**
 * Following a send (lib/worker/tx/follow.ts, docs/delivery.md#throughput): a transaction just
 * broadcast cannot be in a block read before it, so its receipt is first asked after the next head,
 * not at once (one request fewer per message). The node is a scripted JSON-RPC transport whose
 * chain mines the transaction in the block after the broadcast; the clock is injected.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPublicClient, custom, keccak256, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { headsOf } from '../../../../lib/worker/tx/heads.ts';
import { createTransactionSender } from '../../../../lib/worker/tx/sender.ts';
import { rpcReceipt } from '../../../helpers/fixtures/builders.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';

const hex = (n: number | bigint) => `0x${n.toString(16)}`;

describe('following a send (docs/delivery.md#throughput)', () => {
  test('the receipt of a transaction just broadcast is first asked after the next head, then found at once', async () => {
    const clock = createFakeClock(0);
    const account = privateKeyToAccount(`0x${'ad'.repeat(32)}`);
    let head = 10;
    let sent: Hex | undefined;
    /** The head each receipt request was made at. */
    const receiptsAt: number[] = [];
    const publicClient = createPublicClient({
      transport: custom({
        async request({ method, params }: { method: string; params: unknown[] }) {
          switch (method) {
            case 'eth_chainId':
              return '0x7a69';
            case 'eth_getTransactionCount':
              return '0x0';
            case 'eth_blockNumber':
              return hex(head);
            case 'eth_getBlockByNumber':
              return { number: hex(head), hash: `0x${'0b'.repeat(32)}`, baseFeePerGas: '0x1', transactions: [] };
            case 'eth_maxPriorityFeePerGas':
              return '0x1';
            case 'eth_sendRawTransaction':
              sent = keccak256(params[0] as Hex);
              return sent;
            case 'eth_getTransactionReceipt': {
              receiptsAt.push(head);
              // Mined in block 11, the block after the broadcast.
              if (params[0] !== sent || head < 11) return null;
              return { ...rpcReceipt(String(sent), []), blockNumber: '0xb' };
            }
            default:
              throw new Error(`unexpected ${method}`);
          }
        },
      }),
    });
    // Other sends are waiting (the steady state): the head watcher has read block 10 already.
    const primed = headsOf(publicClient, clock).after(undefined, 1_000);
    await clock.advance(0);
    await primed;
    assert.equal(headsOf(publicClient, clock).latest(), 10n);
    const sender = createTransactionSender({ publicClient, account, clock });
    const sending = sender.send(
      { to: `0x${'66'.repeat(20)}`, data: '0x' },
      { simulated: { estimate: 21_000n, gas: 21_000n } },
    );
    // Block 11 comes half a second after the broadcast (within pollMs, 1 s).
    let done = false;
    void sending.finally(() => (done = true)).catch(() => {});
    for (let ms = 0; !done && ms < 30_000; ms += 250) {
      if (ms === 500) head = 11;
      await clock.advance(250);
    }
    const result = await sending;
    assert.equal(result.hash, sent);
    assert.deepEqual(receiptsAt, [11], 'one receipt request, at the head after the broadcast');
  });
});
