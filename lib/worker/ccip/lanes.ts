/**
 * Slow gateways off the delivery loop's slots (docs/hostile-recipients.md#slow-gateways). A message holds a
 * delivery slot while its attempt runs; a CCIP-read lookup may hold it for at most `holdMs`. A lookup
 * that has not finished by then is not abandoned: it goes on in the background (a request, not a
 * delivery slot), the message is given back at once (DeliveryError `busy`, a wait that does not count)
 * and its next claim takes the outcome, an answer or a failure, which then counts as it would
 * have in the slot. The message is remembered as slow: its later lookups start in the background
 * directly, so a known-slow message never holds a slot again and a first-time or fast lookup never
 * queues behind it. At most `background` lookups run there; past that a slow message waits.
 *
 * The memory is this process's: a restart forgets which messages were slow, and each then costs
 * one more `holdMs` in a slot. Outcomes not taken within `keepMs` are dropped (the next claim asks
 * again), and at most `background` of them are kept.
 */
import type { Clock } from '../../clock.ts';
import { bytesToHex, parseHex } from '../../codec/hex.ts';
import { keccak256 } from '../../codec/keccak.ts';
import { DeliveryError } from '../errors.ts';
import type { OffchainReader } from '../ism/metadata.ts';

export interface LaneOptions {
  clock: Clock;
  /** How long a lookup may hold its message's delivery slot; past it the lookup goes on in the background. */
  holdMs: number;
  /** Lookups running in the background at once. */
  background: number;
  /** How long a finished background lookup's outcome waits for its message's next claim. */
  keepMs: number;
  /** Slow messages remembered (the oldest forgotten first). Default 10 000. */
  remember?: number;
}

export interface LanedReader {
  read: OffchainReader;
  /** Lookups running in the background now. */
  running(): number;
  /** Aborts every background lookup and forgets everything (the worker stops). */
  close(): void;
}

type Settled = { ok: true; data: `0x${string}` } | { ok: false; error: unknown };

interface Entry {
  controller: AbortController;
  startedAt: number;
  settled?: Settled;
  settledAt?: number;
}

const DEFAULT_REMEMBER = 10_000;

function busy(detail: string): DeliveryError {
  return new DeliveryError('busy', `${detail}; asked again later`);
}

/**
 * One key per message: its raw bytes when the caller gives them (a hostile ISM may revert with
 * other data at every call), else the ISM asked and its revert.
 */
function keyOf(revert: string, ism: string, message: string | undefined): string {
  const of = (hex: string) => {
    const bytes = parseHex(hex);
    return bytes ? bytesToHex(keccak256(bytes)) : hex;
  };
  return message === undefined ? `${ism.toLowerCase()}:${of(revert)}` : `message:${of(message)}`;
}

/** A "not ready" outcome (CcipReadError or DeliveryError `pending`). */
function isPending(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'pending';
}

function settle(work: Promise<`0x${string}`>): Promise<Settled> {
  return work.then(
    (data) => ({ ok: true, data }),
    (error: unknown) => ({ ok: false, error }),
  );
}

export function laneLookups(inner: OffchainReader, o: LaneOptions): LanedReader {
  const { clock } = o;
  const remember = o.remember ?? DEFAULT_REMEMBER;
  const seconds = `${o.holdMs / 1000} s`;
  /** Background lookups, running or finished and not yet taken, by key. */
  const entries = new Map<string, Entry>();
  /** Messages whose lookup outlasted holdMs, oldest first. */
  const slow = new Set<string>();
  let running = 0;

  function markSlow(key: string): void {
    slow.delete(key);
    slow.add(key);
    if (slow.size > remember) slow.delete(slow.values().next().value as string);
  }

  /** Drops outcomes kept too long, and the oldest past `background` of them. */
  function sweep(now: number): void {
    const finished = [...entries].filter(([, e]) => e.settled);
    finished.forEach(([key, e], i) => {
      if (now - e.settledAt! >= o.keepMs || finished.length - i > o.background) entries.delete(key);
    });
  }

  /** Lets `work` go on without the slot; its outcome is kept for the message's next claim. */
  function adopt(key: string, controller: AbortController, work: Promise<Settled>, startedAt: number): void {
    const entry: Entry = { controller, startedAt };
    entries.set(key, entry);
    running++;
    void work.then((settled) => {
      running--;
      if (entries.get(key) !== entry) return;
      entry.settled = settled;
      entry.settledAt = clock.now();
      // A lookup that answered within holdMs after all: its gateways are not slow (any more).
      if (entry.settledAt - startedAt < o.holdMs) slow.delete(key);
    });
  }

  function background(
    key: string,
    revert: `0x${string}`,
    ism: `0x${string}`,
    message: `0x${string}` | undefined,
  ): void {
    const controller = new AbortController();
    const work = Promise.resolve().then(() => inner(revert, ism, controller.signal, message));
    adopt(key, controller, settle(work), clock.now());
  }

  const read: OffchainReader = async (revert, ism, signal, message) => {
    signal?.throwIfAborted();
    const now = clock.now();
    sweep(now);
    const key = keyOf(revert, ism, message);
    const entry = entries.get(key);
    if (entry) {
      if (!entry.settled) throw busy('its gateway lookup is still running in the background (slow gateways)');
      entries.delete(key);
      if (entry.settled.ok) {
        slow.delete(key);
        return entry.settled.data;
      }
      // Not ready: the message will be polled again; its next lookup starts now, so the poll
      // takes a fresh outcome instead of one more round in the background.
      if (isPending(entry.settled.error) && slow.has(key) && running < o.background)
        background(key, revert, ism, message);
      throw entry.settled.error;
    }
    if (slow.has(key)) {
      if (running >= o.background)
        throw busy(`its gateways were slow before, and all ${o.background} background lookups are in use`);
      background(key, revert, ism, message);
      throw busy('its gateways were slow before: its lookup runs in the background');
    }

    // Not known to be slow: in the slot, for at most holdMs.
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const work = settle(Promise.resolve().then(() => inner(revert, ism, controller.signal, message)));
    let timer: unknown;
    const outcome = await Promise.race([
      work,
      new Promise<'slow'>((resolve) => {
        timer = clock.setTimeout(() => resolve('slow'), o.holdMs);
      }),
    ]);
    clock.clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    if (outcome !== 'slow') {
      if (outcome.ok) return outcome.data;
      throw outcome.error;
    }
    markSlow(key);
    if (signal?.aborted) {
      controller.abort(signal.reason);
      throw signal.reason;
    }
    if (running >= o.background) {
      controller.abort(busy('gateway lookup given up: every background lookup is in use'));
      throw busy(
        `its gateways did not answer within ${seconds}, and all ${o.background} background lookups are in use`,
      );
    }
    adopt(key, controller, work, now);
    throw busy(`its gateways did not answer within ${seconds}: the lookup goes on in the background`);
  };

  return {
    read,
    running: () => running,
    close() {
      for (const e of entries.values())
        if (!e.settled) e.controller.abort(new DeliveryError('stopped', 'the worker stops'));
      entries.clear();
      slow.clear();
    },
  };
}
