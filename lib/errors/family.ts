/**
 * The error family (lib/errors/classes.ts, the worker's in lib/errors/worker.ts, and the worker's
 * refusal of an unstated policy in lib/config/stated-policy.ts): BaseError and every class extending it. Every entry point
 * exports all of them (docs/embedding.md#typescript), so a `catch` tells errors apart with the
 * classes of the entry point it calls; they are the same classes everywhere.
 */
export {
  BaseError,
  ConfigError,
  DecodeError,
  InvalidArgumentError,
  OutOfRangeError,
  RelayApiError,
  RelayError,
  RpcError,
  SchemaVersionError,
  StoreUnavailableError,
} from './classes.ts';
export { CcipReadError, DeliveryError, TransactionError } from './worker.ts';
export { UnstatedPolicyError } from '../config/stated-policy.ts';
