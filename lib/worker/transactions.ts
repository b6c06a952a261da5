/**
 * Landing a transaction on a destination chain (docs/delivery.md, Transactions): simulate it
 * first (`eth_estimateGas`: a call that would revert is never signed), sign with a gas limit of
 * the estimate plus a margin and EIP-1559 fees from the node, take nonces from one sequence per
 * signer and chain shared by every concurrent send, re-send with the same nonce and bumped fees
 * when the transaction is not mined in time, and wait for N confirmations of whichever of the
 * replacements was mined, calling `onWait` while waiting (the delivery loop extends its lease).
 *
 * Errors are TransactionError with a `kind` (lib/worker/errors.ts); their messages never quote the node's URL, the
 * request body or the key (viem's own messages do, so they are not passed on).
 */
import {
  decodeErrorResult,
  type Abi,
  type Account,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
  type WalletClient,
} from 'viem';
import { sleep, systemClock, type Clock } from '../clock.ts';
import { OutOfRangeError } from '../errors.ts';
import { TransactionError, type TransactionErrorKind } from './errors.ts';

export { TransactionError, type TransactionErrorKind } from './errors.ts';

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

// ---------------------------------------------------------------------------------------------
// Nonces: one sequence per (signer, chain), shared by every sender built on the same client.

interface NonceSequence {
  /** The next nonce to hand out; undefined until read from the node (again after a resync). */
  next: number | undefined;
  /** Serialises reads from the node, so concurrent sends get consecutive nonces. */
  reading: Promise<number> | undefined;
}

const sequences = new WeakMap<object, Map<string, NonceSequence>>();

function sequenceFor(client: object, key: string): NonceSequence {
  let byKey = sequences.get(client);
  if (!byKey) {
    byKey = new Map();
    sequences.set(client, byKey);
  }
  let seq = byKey.get(key);
  if (!seq) {
    seq = { next: undefined, reading: undefined };
    byKey.set(key, seq);
  }
  return seq;
}

// ---------------------------------------------------------------------------------------------
// Errors: viem's messages carry the URL and the request; keep only what the node said.

interface Classified {
  kind: TransactionErrorKind | 'nonce-low' | 'underpriced';
  /** The node's words (viem's `details`), for reasons; never the URL. */
  said: string;
  revertData?: Hex;
}

function chainOf(err: unknown): unknown[] {
  const out: unknown[] = [];
  let e: unknown = err;
  for (let i = 0; e && i < 12; i++) {
    out.push(e);
    e = (e as { cause?: unknown }).cause;
  }
  return out;
}

function classify(err: unknown): Classified {
  const chain = chainOf(err);
  const names = chain.map((e) => String((e as { name?: unknown }).name ?? ''));
  const details = chain
    .map((e) => (e as { details?: unknown }).details)
    .filter((d): d is string => typeof d === 'string');
  const said = details.find((d) => d.length > 0) ?? '';
  const text = `${names.join(' ')} ${details.join(' ')}`.toLowerCase();
  let revertData: Hex | undefined;
  for (const e of chain) {
    const data = (e as { data?: unknown }).data;
    if (typeof data === 'string' && /^0x[0-9a-fA-F]*$/.test(data) && data.length >= 10) {
      revertData = data as Hex;
      break;
    }
    // ExecutionRevertedError and friends keep it one level down in `data.data` on some nodes.
    if (data && typeof data === 'object' && typeof (data as { data?: unknown }).data === 'string') {
      revertData = (data as { data: Hex }).data;
      break;
    }
  }
  if (/nonce too low|already known|transaction already imported|noncetoolowerror/.test(text))
    return { kind: 'nonce-low', said };
  if (/nonce too high|noncetoohigherror|nonce has max value/.test(text)) return { kind: 'nonce', said };
  if (/underpriced|fee too low|max fee per gas less than block base fee/.test(text))
    return { kind: 'underpriced', said };
  if (/insufficient funds|insufficientfundserror/.test(text)) return { kind: 'insufficient-funds', said };
  if (/gas required exceeds allowance|out of gas|intrinsic gas too low|intrinsicgastoolowerror/.test(text))
    return { kind: 'out-of-gas', said };
  if (revertData !== undefined || /revert/.test(text)) return { kind: 'revert', said, revertData };
  return { kind: 'rpc', said };
}

/** The contract's reason: Error(string), Panic(uint256), a custom error from `abi`, or the node's words. */
function revertReason(c: Classified, abi: Abi | undefined): string | undefined {
  if (c.revertData && c.revertData.length >= 10) {
    try {
      const decoded = decodeErrorResult({ abi: abi ?? [], data: c.revertData });
      if (decoded.errorName === 'Error') return String(decoded.args?.[0]);
      if (decoded.errorName === 'Panic') return `panic 0x${BigInt(decoded.args?.[0] as bigint).toString(16)}`;
      const args = (decoded.args ?? []).map((a) => (typeof a === 'bigint' ? a.toString() : String(a)));
      return `${decoded.errorName}(${args.join(', ')})`;
    } catch {
      return `custom error ${c.revertData.slice(0, 10)}`;
    }
  }
  const m = /execution reverted:?\s*(.*)/i.exec(c.said);
  if (m?.[1].trim()) return m[1].trim().slice(0, 300);
  return undefined;
}

function toError(c: Classified, during: string, abi: Abi | undefined, cause: unknown, hash?: Hash): TransactionError {
  const extra = { cause, hash };
  switch (c.kind) {
    case 'revert': {
      const reason = revertReason(c, abi);
      return new TransactionError('revert', reason ? `${during} reverted: ${reason}` : `${during} reverted`, {
        ...extra,
        reason,
      });
    }
    case 'out-of-gas':
      return new TransactionError('out-of-gas', `${during}: out of gas`, extra);
    case 'insufficient-funds':
      return new TransactionError('insufficient-funds', `${during}: the signer cannot pay for gas`, extra);
    case 'nonce':
    case 'nonce-low':
      return new TransactionError('nonce', `${during}: nonce refused by the node`, extra);
    case 'underpriced':
      return new TransactionError('rpc', `${during}: fees refused by the node as too low`, extra);
    default:
      return new TransactionError('rpc', `${during}: node unreachable or failing`, extra);
  }
}

/** x * (1 + basisPoints / 10 000), rounded up, so a bump is never lost to rounding. */
function bump(x: bigint, basisPoints: bigint): bigint {
  return (x * (10_000n + basisPoints) + 9_999n) / 10_000n;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

export function createTransactionSender(opts: TransactionSenderOptions): TransactionSender {
  const { publicClient, walletClient, account } = opts;
  const clock = opts.clock ?? systemClock;
  const margin = BigInt(Math.round((opts.gasMarginPercent ?? 20) * 100));
  const bumpPercent = opts.feeBumpPercent ?? 12.5;
  if (!(bumpPercent >= 10))
    throw new OutOfRangeError('feeBumpPercent must be at least 10 (nodes refuse smaller replacements)');
  const bumpBp = BigInt(Math.round(bumpPercent * 100));
  const replaceAfterMs = opts.replaceAfterMs ?? 60_000;
  const confirmations = BigInt(Math.max(1, opts.confirmations ?? 1));
  const pollMs = opts.pollMs ?? 1_000;
  const timeoutMs = opts.timeoutMs ?? 600_000;
  const address: Address = typeof account === 'string' ? account : account.address;
  const chain: Chain | undefined = walletClient.chain ?? publicClient.chain;
  const sequenceKey = `${address.toLowerCase()}:${chain?.id ?? 'unknown'}`;
  const seq = sequenceFor(publicClient, sequenceKey);

  async function reserveNonce(): Promise<number> {
    for (;;) {
      if (seq.next !== undefined) return seq.next++;
      if (!seq.reading) {
        seq.reading = publicClient.getTransactionCount({ address, blockTag: 'pending' }).finally(() => {
          seq.reading = undefined;
        });
        try {
          seq.next = await seq.reading;
        } catch (err) {
          throw toError(classify(err), 'reading the nonce', opts.errorAbi, err);
        }
      } else {
        await seq.reading.catch(() => {});
      }
    }
  }

  /** The node's view is the truth again: the next reservation re-reads it. */
  function resync(): void {
    seq.next = undefined;
  }

  async function simulate(req: TransactionRequest): Promise<SimulateResult> {
    let estimate: bigint;
    try {
      estimate = await publicClient.estimateGas({ account, to: req.to, data: req.data, value: req.value });
    } catch (err) {
      throw toError(classify(err), 'simulation', opts.errorAbi, err);
    }
    return { estimate, gas: (estimate * (100n * 100n + margin) + 9_999n) / 10_000n };
  }

  async function nodeFees(): Promise<Fees> {
    try {
      const f = await publicClient.estimateFeesPerGas({ chain, type: 'eip1559' });
      return { maxFeePerGas: f.maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas };
    } catch (err) {
      throw toError(classify(err), 'reading fees', opts.errorAbi, err);
    }
  }

  function broadcast(req: TransactionRequest, gas: bigint, nonce: number, fees: Fees): Promise<Hash> {
    return walletClient.sendTransaction({
      account,
      chain,
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
      const nonce = await reserveNonce();
      try {
        return { hash: await broadcast(req, gas, nonce, fees), nonce };
      } catch (err) {
        const c = classify(err);
        // Not sent: whatever this nonce was, the node's count is the truth again.
        resync();
        if (c.kind === 'nonce-low' && attempt < 3) continue;
        throw toError(c, 'sending', opts.errorAbi, err);
      }
    }
  }

  async function receiptOf(hash: Hash): Promise<TransactionReceipt | undefined> {
    try {
      return await publicClient.getTransactionReceipt({ hash });
    } catch (err) {
      const name = (err as { name?: string }).name;
      if (name === 'TransactionReceiptNotFoundError') return undefined;
      throw err;
    }
  }

  async function send(req: TransactionRequest, sendOpts: SendOptions = {}): Promise<SendResult> {
    const { gas } = await simulate(req);
    let fees = await nodeFees();
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
        for (const hash of hashes) {
          mined = await receiptOf(hash);
          if (mined) break;
        }
        if (mined) {
          seenMined = true;
          if (mined.status !== 'success') {
            const outOfGas = mined.gasUsed >= gas;
            throw outOfGas
              ? new TransactionError('out-of-gas', 'the transaction ran out of gas', { hash: mined.transactionHash })
              : await minedRevert(req, mined);
          }
          const head = await publicClient.getBlockNumber({ cacheTime: 0 });
          if (head - mined.blockNumber + 1n >= confirmations) {
            // Still there after the wait (a reorg would have dropped it): done.
            const again = await receiptOf(mined.transactionHash);
            if (again && again.blockHash === mined.blockHash) return { hash: mined.transactionHash, receipt: again };
          }
        }
      } catch (err) {
        if (err instanceof TransactionError) throw err;
        const c = classify(err);
        // The transaction is out there: a node that fails for a while (restart, rate limit) is
        // waited out until `timeoutMs`, not taken for a failed send.
        if (c.kind !== 'rpc') throw toError(c, 'waiting for the receipt', opts.errorAbi, err, last);
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
        const current = await nodeFees().catch(() => fees);
        const bumped: Fees = {
          maxPriorityFeePerGas: max(bump(fees.maxPriorityFeePerGas, bumpBp), current.maxPriorityFeePerGas),
          maxFeePerGas: max(bump(fees.maxFeePerGas, bumpBp), current.maxFeePerGas),
        };
        if (bumped.maxFeePerGas < bumped.maxPriorityFeePerGas) bumped.maxFeePerGas = bumped.maxPriorityFeePerGas;
        try {
          const hash = await broadcast(req, gas, nonce, bumped);
          hashes.unshift(hash);
          last = hash;
        } catch (err) {
          const c = classify(err);
          // Nonce used: one of ours was mined meanwhile (the next poll finds it). Underpriced:
          // bump again from the higher fees next time. Anything else ends the send.
          if (c.kind !== 'nonce-low' && c.kind !== 'underpriced')
            throw toError(c, 'replacing', opts.errorAbi, err, last);
        }
        fees = bumped;
        sentAt = now;
      }
      await sleep(clock, pollMs);
    }
  }

  /** A mined revert: replay the call at its block for the reason. */
  async function minedRevert(req: TransactionRequest, mined: TransactionReceipt): Promise<TransactionError> {
    try {
      await publicClient.call({
        account,
        to: req.to,
        data: req.data,
        value: req.value,
        blockNumber: mined.blockNumber,
      });
    } catch (err) {
      const c = classify(err);
      if (c.kind === 'revert') {
        const reason = revertReason(c, opts.errorAbi);
        return new TransactionError(
          'revert',
          reason ? `the transaction reverted: ${reason}` : 'the transaction reverted',
          { reason, hash: mined.transactionHash },
        );
      }
    }
    return new TransactionError('revert', 'the transaction reverted', { hash: mined.transactionHash });
  }

  return { simulate, send };
}
