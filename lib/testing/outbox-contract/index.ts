/**
 * The outbox contract suite (docs/embedding.md#checking-your-own-outbox): the tests every outbox
 * engine passes (memory, SQLite, PostgreSQL here; an embedder's own through `relayer-api/testing`),
 * run with node:test. Each section is one file of this folder; a new section is a new file, its
 * name in OutboxContractSection and one line in OUTBOX_CONTRACT_SECTIONS.
 */
import { afterEach, beforeEach, describe } from 'node:test';
import { InvalidArgumentError } from '../../errors/classes.ts';
import { createFakeClock, type FakeClock } from '../clock.ts';
import { concurrencySection } from './concurrency.ts';
import { type ContractSection, type MakeOutbox, type OutboxHarness, T0 } from './context.ts';
import { enqueueSection } from './enqueue.ts';
import { gasSection } from './gas.ts';
import { journalSection } from './journal.ts';
import { leasesSection } from './leases.ts';
import { listingSection } from './listing.ts';
import { outcomesSection } from './outcomes.ts';
import { retentionSection } from './retention.ts';
import { retriesSection } from './retries.ts';
import { signersSection } from './signers.ts';

/** The sections' names. */
export type OutboxContractSection =
  | 'enqueue'
  | 'gas'
  | 'leases'
  | 'retries'
  | 'listing'
  | 'outcomes'
  | 'concurrency'
  | 'journal'
  | 'signers'
  | 'retention';

/** The sections, by name, in the order they run. */
export const OUTBOX_CONTRACT_SECTIONS: Readonly<Record<OutboxContractSection, ContractSection>> = {
  enqueue: enqueueSection,
  gas: gasSection,
  leases: leasesSection,
  retries: retriesSection,
  listing: listingSection,
  outcomes: outcomesSection,
  concurrency: concurrencySection,
  journal: journalSection,
  signers: signersSection,
  retention: retentionSection,
};

export interface OutboxContractOptions {
  /** Sections not to run (an outbox that leaves a role out, docs/embedding.md#checking-your-own-outbox). */
  skip?: readonly OutboxContractSection[];
}

/**
 * Registers the contract's tests (a node:test `describe` named after `name`); `make` opens a new,
 * empty outbox on the given fake clock for each test, and the harness's close() is called after it.
 */
export function outboxContract(name: string, make: MakeOutbox, options: OutboxContractOptions = {}): void {
  const skip = new Set(options.skip ?? []);
  describe(`Outbox contract: ${name}`, () => {
    let h: OutboxHarness | undefined;
    let clock: FakeClock | undefined;
    beforeEach(async () => {
      clock = createFakeClock(T0 + 1_000_000);
      h = await make(clock);
    });
    afterEach(async () => {
      await h?.close();
      h = undefined;
    });
    const ctx = {
      get h() {
        if (h === undefined) throw new InvalidArgumentError('the outbox contract: no harness outside a test');
        return h;
      },
      get clock() {
        if (clock === undefined) throw new InvalidArgumentError('the outbox contract: no clock outside a test');
        return clock;
      },
    };
    for (const [section, register] of Object.entries(OUTBOX_CONTRACT_SECTIONS)) {
      if (!skip.has(section as OutboxContractSection)) register(ctx);
    }
  });
}
