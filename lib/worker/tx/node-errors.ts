/**
 * What a node said when a call or a send failed, as a TransactionError (docs/delivery.md,
 * Transactions). viem's messages carry the URL and the request; only the node's own words (viem's
 * `details`) and the revert data are kept.
 */
import { decodeErrorResult, type Abi, type Hash, type Hex } from 'viem';
import { TransactionError, type TransactionErrorKind } from '../errors.ts';

/**
 * A failure sorted by what the sender does next: `nonce-low` (the nonce is used: re-read it, or a
 * replacement's predecessor was mined) and `underpriced` (bump the fees again) are handled there;
 * the rest become the TransactionError of their kind.
 */
export interface Classified {
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

export function classify(err: unknown): Classified {
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
