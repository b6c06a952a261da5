/**
 * The checks of the gas payments and the gas book every outbox engine shares
 * (docs/gas.md#gas-payment-enforcement, #gas-already-spent), so all three refuse the same calls
 * with the same errors.
 */
import { InvalidArgumentError } from '../errors/classes.ts';
import type { GasPayment, GasSpend } from '../gas/payment.ts';
import { isHexOfLength, isUint } from '../codec/hex.ts';

const UINT256_MAX = 2n ** 256n - 1n;
const isUint256 = (value: unknown): value is bigint => typeof value === 'bigint' && value >= 0n && value <= UINT256_MAX;
const isLowerHash = (value: unknown): value is string =>
  isHexOfLength(value, 32) && (value as string) === (value as string).toLowerCase();

/** Gas payments as every engine stores them: lower-case hex, uint32 destination, uint256 amounts. */
export function checkGasPayments(payments: readonly GasPayment[], where = 'payments'): void {
  if (!Array.isArray(payments)) throw new InvalidArgumentError(`${where} must be an array`);
  payments.forEach((p, i) => {
    const bad = (field: string) => new InvalidArgumentError(`${where}[${i}].${field} is invalid`);
    if (typeof p !== 'object' || p === null) throw new InvalidArgumentError(`${where}[${i}] is not an object`);
    if (!isLowerHash(p.messageId)) throw bad('messageId');
    if (!isUint(p.destination)) throw bad('destination');
    for (const field of ['gasAmount', 'payment'] as const) if (!isUint256(p[field])) throw bad(field);
    if (!isLowerHash(p.txHash)) throw bad('txHash');
    if (!Number.isSafeInteger(p.logIndex) || p.logIndex < 0) throw bad('logIndex');
  });
}

/** Spends as every engine stores them: lower-case message id and transaction hash, uint256 amounts. */
export function checkGasSpent(spends: readonly GasSpend[]): void {
  if (!Array.isArray(spends)) throw new InvalidArgumentError('spends must be an array');
  spends.forEach((p, i) => {
    const bad = (field: string) => new InvalidArgumentError(`spends[${i}].${field} is invalid`);
    if (typeof p !== 'object' || p === null) throw new InvalidArgumentError(`spends[${i}] is not an object`);
    if (!isLowerHash(p.messageId)) throw bad('messageId');
    if (!isLowerHash(p.txHash)) throw bad('txHash');
    if (!isUint256(p.gasUsed)) throw bad('gasUsed');
    if (!isUint256(p.cost)) throw bad('cost');
  });
}

/** setRequiredGas's arguments: the id lower-cased (unknown ids are the engine's to answer), the gas a uint256. */
export function checkRequiredGas(id: unknown, gas: unknown): string {
  if (typeof id !== 'string') throw new InvalidArgumentError('id must be a string');
  if (!isUint256(gas)) throw new InvalidArgumentError('gas must be a uint256 bigint');
  return id.toLowerCase();
}
