/**
 * Landing a transaction on a destination chain (docs/delivery.md, Transactions): simulate it
 * first (`eth_estimateGas`: a call that would revert is never signed), sign with a gas limit of
 * the estimate plus a margin and EIP-1559 fees from the node (lib/worker/tx/fees.ts), take nonces
 * from one sequence per signer and chain shared by every concurrent send (lib/worker/tx/nonces.ts),
 * re-send with the same nonce and bumped fees when the transaction is not mined in time, and wait
 * for N confirmations of whichever of the replacements was mined (lib/worker/tx/receipts.ts),
 * calling `onWait` while waiting (the delivery loop extends its lease).
 *
 * Errors are TransactionError with a `kind` (lib/worker/errors.ts); their messages never quote the
 * node's URL, the request body or the key (viem's own messages do, so they are not passed on:
 * lib/worker/tx/node-errors.ts).
 */
import type { Abi, Account, Address, Chain, Hash, Hex, PublicClient, TransactionReceipt, WalletClient } from 'viem';
import { sleep, systemClock, type Clock } from '../../clock.ts';
import { OutOfRangeError } from '../../errors.ts';
import { TransactionError } from '../errors.ts';
import { basisPoints, bump, nodeFees, replacementFees, type Fees } from './fees.ts';
import { classify, transactionError } from './node-errors.ts';
import { nonceSequence } from './nonces.ts';
import { confirmedReceipt, firstMined, minedFailure } from './receipts.ts';

export { TransactionError, type TransactionErrorKind } from '../errors.ts';

export interface TransactionRequest {
  to: Address;
  data: Hex;
  value?: bigint;
}

export interface TransactionSenderOptions {
  publicClient: PublicClient;
  walletClient: WalletClient;
  /** A local account (signs here) or an address the node signs for. */
  account: Account | Address;
  clock?: Clock;
  /** Gas limit = estimate * (100 + margin) / 100. Default 20. */
  gasMarginPercent?: number;
  /** A transaction not mined this long after it was sent is re-sent with bumped fees. Default 60 000. */
  replaceAfterMs?: number;
  /** Each replacement raises both fees by this much (nodes require at least 10). Default 12.5. */
  feeBumpPercent?: number;
  /** Blocks including the transaction's own. Default 1 (mined). */
  confirmations?: number;
  /** Interval between receipt and block polls. Default 1 000. */
  pollMs?: number;
  /** Overall wait for one send, from the first broadcast. Default 600 000. */
  timeoutMs?: number;
  /** Custom errors to decode revert reasons with (e.g. the ISM's and recipient's ABIs). */
  errorAbi?: Abi;
}

export interface SendOptions {
  /** Called on every poll while waiting; an error it throws ends the wait (the transaction may still land). */
  onWait?: () => Promise<void>;
  /**
   * The simulation of this same request the caller has just run (`simulate`): its gas limit is
   * used instead of estimating again.
   */
  simulated?: SimulateResult;
}

export interface SimulateResult {
  /** The node's estimate. */
  estimate: bigint;
  /** The gas limit a send uses: the estimate plus the margin. */
  gas: bigint;
}

export interface SendResult {
  hash: Hash;
  receipt: TransactionReceipt;
}

export interface TransactionSender {
  simulate(req: TransactionRequest): Promise<SimulateResult>;
  send(req: TransactionRequest, opts?: SendOptions): Promise<SendResult>;
}

export function createTransactionSender(opts: TransactionSenderOptions): TransactionSender {
  const { publicClient, walletClient, account, errorAbi } = opts;
  const clock = opts.clock ?? systemClock;
  const margin = basisPoints(opts.gasMarginPercent ?? 20);
  const bumpPercent = opts.feeBumpPercent ?? 12.5;
  if (!(bumpPercent >= 10))
    throw new OutOfRangeError('feeBumpPercent must be at least 10 (nodes refuse smaller replacements)');
  const bumpBp = basisPoints(bumpPercent);
  const replaceAfterMs = opts.replaceAfterMs ?? 60_000;
  const confirmations = BigInt(Math.max(1, opts.confirmations ?? 1));
  const pollMs = opts.pollMs ?? 1_000;
  const timeoutMs = opts.timeoutMs ?? 600_000;
  const address: Address = typeof account === 'string' ? account : account.address;
  const chain: Chain | undefined = walletClient.chain ?? publicClient.chain;
  const nonces = nonceSequence(publicClient, address, chain?.id, errorAbi);

  async function simulate(req: TransactionRequest): Promise<SimulateResult> {
    let estimate: bigint;
    try {
      estimate = await publicClient.estimateGas({ account, to: req.to, data: req.data, value: req.value });
    } catch (err) {
      throw transactionError(classify(err), 'simulation', errorAbi, err);
    }
    return { estimate, gas: bump(estimate, margin) };
  }

  function broadcast(req: TransactionRequest, gas: bigint, nonce: number, fees: Fees): Promise<Hash> {
    return walletClient.sendTransaction({
      account,
      chain,
      // Named, with the nonce, gas and fees: viem then has nothing left to fill and signs at once,
      // instead of asking the node to fill the transaction (eth_fillTransaction) for the chain id.
      chainId: chain?.id,
      to: req.to,
      data: req.data,
      value: req.value,
      gas,
      nonce,
      type: 'eip1559',
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    } as Parameters<WalletClient['sendTransaction']>[0]);
  }

  /** The first broadcast: a stale nonce is re-read from the node and tried again (bounded). */
  async function firstBroadcast(
    req: TransactionRequest,
    gas: bigint,
    fees: Fees,
  ): Promise<{ hash: Hash; nonce: number }> {
    for (let attempt = 0; ; attempt++) {
      const nonce = await nonces.reserve();
      try {
        return { hash: await broadcast(req, gas, nonce, fees), nonce };
      } catch (err) {
        const c = classify(err);
        // Not sent: whatever this nonce was, the node's count is the truth again.
        nonces.resync();
        if (c.kind === 'nonce-low' && attempt < 3) continue;
        throw transactionError(c, 'sending', errorAbi, err);
      }
    }
  }

  async function send(req: TransactionRequest, sendOpts: SendOptions = {}): Promise<SendResult> {
    const { gas } = sendOpts.simulated ?? (await simulate(req));
    let fees = await nodeFees(publicClient, chain, errorAbi);
    const first = await firstBroadcast(req, gas, fees);
    const nonce = first.nonce;
    const hashes: Hash[] = [first.hash];
    const startedAt = clock.now();
    let sentAt = startedAt;
    let last: Hash = first.hash;
    let rpcFailures = 0;
    let seenMined = false;

    for (;;) {
      let mined: TransactionReceipt | undefined;
      try {
        mined = await firstMined(publicClient, hashes);
        if (mined) {
          seenMined = true;
          if (mined.status !== 'success') throw await minedFailure(publicClient, account, req, mined, gas, errorAbi);
          const receipt = await confirmedReceipt(publicClient, mined, confirmations);
          if (receipt) return { hash: mined.transactionHash, receipt };
        }
      } catch (err) {
        if (err instanceof TransactionError) throw err;
        const c = classify(err);
        // The transaction is out there: a node that fails for a while (restart, rate limit) is
        // waited out until `timeoutMs`, not taken for a failed send.
        if (c.kind !== 'rpc') throw transactionError(c, 'waiting for the receipt', errorAbi, err, last);
        rpcFailures += 1;
      }
      if (sendOpts.onWait) await sendOpts.onWait();
      const now = clock.now();
      if (now - startedAt >= timeoutMs) {
        const node = rpcFailures > 0 ? `; the node failed ${rpcFailures} poll${rpcFailures === 1 ? '' : 's'}` : '';
        throw new TransactionError(
          'timeout',
          `not ${seenMined ? 'confirmed' : 'mined'} within ${timeoutMs} ms (nonce ${nonce})${node}`,
          { hash: last },
        );
      }
      if (!mined && now - sentAt >= replaceAfterMs) {
        // Same nonce, both fees up by the bump (and at least what the node asks now).
        const current = await nodeFees(publicClient, chain, errorAbi).catch(() => fees);
        const bumped = replacementFees(fees, current, bumpBp);
        try {
          const hash = await broadcast(req, gas, nonce, bumped);
          hashes.unshift(hash);
          last = hash;
        } catch (err) {
          const c = classify(err);
          // Nonce used: one of ours was mined meanwhile (the next poll finds it). Underpriced:
          // bump again from the higher fees next time. Anything else ends the send.
          if (c.kind !== 'nonce-low' && c.kind !== 'underpriced')
            throw transactionError(c, 'replacing', errorAbi, err, last);
        }
        fees = bumped;
        sentAt = now;
      }
      await sleep(clock, pollMs);
    }
  }

  return { simulate, send };
}
