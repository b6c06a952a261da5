/**
 * What a node said when a call or a send failed, as a TransactionError (docs/transactions.md,
 * Transactions). viem's errors are walked with its own `BaseError.walk()` and matched by class;
 * the node's words (viem's `details`) are read only where no class exists for what they say
 * ("already known": the node has the transaction). viem's messages carry the URL and the request:
 * only the node's words and the revert data are kept.
 */
import {
  BaseError as ViemError,
  decodeErrorResult,
  ExecutionRevertedError,
  FeeCapTooLowError,
  InsufficientFundsError,
  IntrinsicGasTooLowError,
  NonceMaxValueError,
  NonceTooHighError,
  NonceTooLowError,
  RpcRequestError,
  TipAboveFeeCapError,
  type Abi,
  type Hash,
  type Hex,
} from 'viem';
import { TransactionError, type TransactionFailureCode } from '../errors.ts';

/**
 * A failure sorted by what the sender does next: `known` (the node already has this very
 * transaction: it is sent), `nonce_low` (the nonce is used: by one of ours that was mined, or by
 * another), `underpriced` (a transaction holds the nonce in the pool at higher fees, or the fees
 * are below what the node takes) are handled there; the rest become the TransactionError of their
 * kind.
 */
export interface Classified {
  kind: TransactionFailureCode | 'known' | 'nonce_low' | 'underpriced';
  /** The node's words (viem's `details`), for reasons; never the URL. */
  said: string;
  /** The node answered (a JSON-RPC error): what it refused, it did not take. Else the request may or may not have reached it. */
  answered: boolean;
  revertData?: Hex;
}

const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;

/** The revert data somewhere in the error: a `data` string, or `data.data` on some nodes. */
function revertDataOf(err: ViemError): Hex | undefined {
  let found: Hex | undefined;
  err.walk((e) => {
    const data = (e as { data?: unknown }).data;
    if (typeof data === 'string' && HEX.test(data) && data.length >= 10) found = data as Hex;
    else if (data && typeof data === 'object') {
      const inner = (data as { data?: unknown }).data;
      if (typeof inner === 'string' && HEX.test(inner) && inner.length >= 10) found = inner as Hex;
    }
    return found !== undefined;
  });
  return found;
}

export function classify(err: unknown): Classified {
  if (!(err instanceof ViemError)) return { kind: 'rpc', said: '', answered: false };
  const request = err.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null;
  const said = request?.details ?? '';
  const answered = request !== null;
  const is = (type: abstract new (...args: never[]) => Error) => err.walk((e) => e instanceof type) !== null;
  const words = said.toLowerCase();
  const revertData = revertDataOf(err);
  // A revert first, by its data or class, then by the node's words: the reason after "execution
  // reverted:" is the contract's text (anyone's), never the node's ("already known", "nonce too low").
  if (is(ExecutionRevertedError) || revertData !== undefined || /revert/.test(words))
    return { kind: 'revert', said, answered, revertData };
  // viem files these under "nonce too low"; they say the node has this very transaction.
  if (/already known|already imported|known transaction|already in (?:the )?(?:tx)?pool/.test(words))
    return { kind: 'known', said, answered };
  if (is(NonceTooLowError) || /nonce too low/.test(words)) return { kind: 'nonce_low', said, answered };
  if (is(NonceTooHighError) || is(NonceMaxValueError)) return { kind: 'nonce', said, answered };
  // geth, erigon, anvil: "insufficient funds for gas * price + value"; viem names the class only
  // where it maps a send's error itself (not for eth_sendRawTransaction through request()).
  if (is(InsufficientFundsError) || /insufficient funds/.test(words))
    return { kind: 'insufficient_funds', said, answered };
  if (is(IntrinsicGasTooLowError) || /gas required exceeds allowance|out of gas/.test(words))
    return { kind: 'out_of_gas', said, answered };
  if (is(FeeCapTooLowError) || is(TipAboveFeeCapError) || /underpriced|fee too low/.test(words))
    return { kind: 'underpriced', said, answered };
  return { kind: 'rpc', said, answered };
}

/** The contract's reason: Error(string), Panic(uint256), a custom error from `abi`, or the node's words. */
export function revertReason(c: Classified, abi: Abi | undefined): string | undefined {
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

/** The TransactionError for a classified failure `during` a step ("simulation", "sending", ...). */
export function transactionError(
  c: Classified,
  during: string,
  abi: Abi | undefined,
  cause: unknown,
  hash?: Hash,
): TransactionError {
  const extra = { cause, hash };
  switch (c.kind) {
    case 'revert': {
      const reason = revertReason(c, abi);
      return new TransactionError('revert', reason ? `${during} reverted: ${reason}` : `${during} reverted`, {
        ...extra,
        reason,
      });
    }
    case 'out_of_gas':
      return new TransactionError('out_of_gas', `${during}: out of gas`, extra);
    case 'insufficient_funds':
      return new TransactionError('insufficient_funds', `${during}: the signer cannot pay for gas`, extra);
    case 'nonce':
    case 'nonce_low':
      return new TransactionError('nonce', `${during}: nonce refused by the node`, extra);
    case 'underpriced':
      return new TransactionError('rpc', `${during}: fees refused by the node as too low`, extra);
    default:
      return new TransactionError('rpc', `${during}: node unreachable or failing`, extra);
  }
}
