/**
 * What the parts of the metadata builder share (docs/isms.md#the-metadata-builder): its options,
 * one message's build context, and the shapes of the injected multisig builder.
 */
import type { Address, Hex, PublicClient } from 'viem';
import type { LookupBudget } from './checkpoints.ts';
import type { IsmReads } from './head-reads.ts';
import type { OffchainReader } from './offchain.ts';

/** A configured origin with a merkleTreeHook and a validatorAnnounce. */
export interface OriginChain {
  name: string;
  domain: number;
  publicClient: PublicClient;
  merkleTreeHook: Address;
  validatorAnnounce: Address;
}

/** Where the message was dispatched: its origin chain (config name) and dispatch transaction. */
export interface MessageSource {
  originChain: string;
  txHash: string;
}

/** The module types a multisig builder serves: MERKLE_ROOT_MULTISIG (4) and MESSAGE_ID_MULTISIG (5) of ISM_TYPE. */
export type MultisigIsmType = 4 | 5;

export interface MultisigRequest {
  publicClient: PublicClient;
  ism: Address;
  type: MultisigIsmType;
  message: Hex;
  source?: MessageSource;
  signal?: AbortSignal;
  /** The same object for every multisig ISM of one message: what they share (their lookup budget). */
  shared: { budget?: LookupBudget };
}

/** Builds a multisig ISM's metadata from its validators' checkpoints; throws DeliveryError (`pending` while too few signed). */
export type MultisigBuilder = (request: MultisigRequest) => Promise<Hex>;

export interface MetadataOptions {
  publicClient: PublicClient;
  mailbox: Address;
  /** The raw Hyperlane message. */
  message: Hex;
  /** The message's recipient, 20 bytes. */
  recipient: Address;
  /** For CCIP_READ ISMs; without it they are `unsupported`. */
  offchain?: OffchainReader;
  /** For multisig ISMs; without it they are `unsupported`. */
  multisig?: MultisigBuilder;
  source?: MessageSource;
  signal?: AbortSignal;
  /** The recipient's ISM and module types, shared per head (lib/worker/ism/head-reads.ts); default: read each time. */
  reads?: IsmReads;
  maxDepth?: number;
  maxIsms?: number;
}

/** One message's build: its options and the ISMs visited so far. */
export interface IsmContext extends MetadataOptions {
  /** The reads of `moduleType()` (the options' shared ones, or direct reads). */
  reads: IsmReads;
  visited: number;
  shared: { budget?: LookupBudget };
}

export type BuildIsm = (c: IsmContext, ism: Address, depth: number) => Promise<{ type: number; metadata: Hex }>;
