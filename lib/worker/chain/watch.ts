/**
 * What a worker checks about its destinations (docs/delivery.md#start-up-checks-and-heartbeat):
 * every RPC URL of a destination must answer `eth_chainId` with the configured chain id (a node of
 * another chain would take transactions signed for it to nowhere, or worse, to the wrong chain),
 * and the signer's balance there, a metric and a warning below the floor. At start the worker
 * refuses to run on a mismatch or a destination none of whose URLs answers; afterwards the same
 * check runs with every heartbeat, and a mismatch makes /ready answer 503 until it is gone.
 *
 * Nodes are asked through injected functions, so the checks run without viem and tests drive
 * them with a fake clock.
 */
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log.ts';
import { redactUrls } from '../../redact.ts';
import { causeText, classifyTransportFailure } from '../../rpc/diagnostics.ts';

/** One destination as the watch sees it. */
export interface WatchedChain {
  name: string;
  /** The configured (or, without one, the node's) chain id. */
  chainId: number;
  /** Each RPC URL's origin (for logs) and how to ask it for its chain id. */
  urls: Array<{ origin: string; chainId(): Promise<number> }>;
  /** The signer's balance in wei, through the chain's client. */
  balance(): Promise<bigint>;
}

/** How one destination looked at the last check. */
export interface ChainState {
  name: string;
  /** URLs that answered another chain id: `origin` and what it answered. */
  wrong: Array<{ origin: string; chainId: number }>;
  /** URLs that did not answer (origin and why). */
  silent: Array<{ origin: string; error: string }>;
  /** Wei; null when no node answered. */
  balance: bigint | null;
}

export interface WorkerWatchOptions {
  chains: readonly WatchedChain[];
  clock: Clock;
  logger: Logger;
  /** Below this many wei on a destination, a warning with each check. */
  minBalanceWei: bigint;
  /** Between heartbeats (and checks). */
  intervalMs: number;
  /** Queued + delivering, for the heartbeat line (null there without it, or when the store did not answer). */
  depth?: () => Promise<number>;
  inFlight(): number;
}

export interface WorkerWatch {
  /** Asks every node once; the states, also kept for ready() and the metrics. */
  check(): Promise<ChainState[]>;
  /**
   * Why the worker must not start (a URL answering another chain id, a destination none of whose
   * URLs answers), one line each; empty when it may.
   */
  refusals(states: readonly ChainState[]): string[];
  /** False while a destination answered another chain id at the last check. */
  ready(): boolean;
  /** The last balances, wei as a number (a gauge), by destination. */
  balances(): Array<[{ destination: string }, number]>;
  /** Heartbeats (with a check each) every intervalMs until stop(). */
  start(): void;
  stop(): void;
}

/**
 * What failed, in the server's words (lib/rpc/diagnostics.ts): viem says "HTTP request failed."
 * for a refused connection, a failed DNS lookup and an HTTP error alike; its cause chain and
 * status say which. Other messages are cut to their first line, URLs redacted (RPC URLs carry
 * API keys).
 */
function errorText(error: unknown): string {
  if (error instanceof Error && error.name === 'HttpRequestError') {
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number') return `HTTP ${status}`;
    const { failure, summary } = classifyTransportFailure(error);
    if (failure !== 'transport' || summary !== 'transport error') return summary;
    const cause = causeText(error);
    return cause === undefined ? summary : `${summary} (${cause})`;
  }
  if (error instanceof Error && error.name === 'TimeoutError') return 'no answer in time';
  return redactUrls(error instanceof Error ? error.message.split('\n')[0] : String(error)).slice(0, 200);
}

export function createWorkerWatch(options: WorkerWatchOptions): WorkerWatch {
  const { chains, clock, logger, minBalanceWei, intervalMs } = options;
  let last: ChainState[] = [];
  let timer: unknown;
  let stopped = false;

  async function checkChain(chain: WatchedChain): Promise<ChainState> {
    const state: ChainState = { name: chain.name, wrong: [], silent: [], balance: null };
    await Promise.all(
      chain.urls.map(async ({ origin, chainId }) => {
        try {
          const id = await chainId();
          if (id !== chain.chainId) state.wrong.push({ origin, chainId: id });
        } catch (error) {
          state.silent.push({ origin, error: errorText(error) });
        }
      }),
    );
    if (state.silent.length < chain.urls.length) {
      state.balance = await chain.balance().catch(() => null);
    }
    return state;
  }

  async function check(): Promise<ChainState[]> {
    last = await Promise.all(chains.map(checkChain));
    return last;
  }

  function refusals(states: readonly ChainState[]): string[] {
    const lines: string[] = [];
    for (const state of states) {
      const expected = chains.find((c) => c.name === state.name)?.chainId;
      for (const w of state.wrong)
        lines.push(
          `chains.${state.name}: the RPC node ${w.origin} answers chain id ${w.chainId}, the config says ${expected}`,
        );
      if (state.wrong.length === 0 && state.silent.length === chains.find((c) => c.name === state.name)?.urls.length)
        lines.push(
          `chains.${state.name}: no RPC node answered eth_chainId (${state.silent.map((s) => `${s.origin}: ${s.error}`).join('; ')})`,
        );
    }
    return lines;
  }

  async function beat(): Promise<void> {
    const [states, depth] = await Promise.all([check(), options.depth?.().catch(() => null) ?? null]);
    logger.info('heartbeat', {
      queue_depth: depth,
      in_flight: options.inFlight(),
      destinations: states.map((s) => s.name),
    });
    for (const state of states) {
      const expected = chains.find((c) => c.name === state.name)?.chainId;
      for (const w of state.wrong)
        logger.error('rpc node of another chain: not ready until it is fixed', {
          destination: state.name,
          rpc: w.origin,
          chain_id: w.chainId,
          expected,
        });
      for (const s of state.silent)
        logger.warn('rpc node did not answer', { destination: state.name, rpc: s.origin, error: s.error });
      if (state.balance !== null && state.balance < minBalanceWei)
        logger.warn('signer balance low', {
          destination: state.name,
          balance_wei: state.balance.toString(),
          floor_wei: minBalanceWei.toString(),
        });
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = clock.setTimeout(
      () => {
        void beat().finally(schedule);
      },
      intervalMs,
      { background: true },
    );
  }

  return {
    check,
    refusals,
    ready: () => last.every((s) => s.wrong.length === 0),
    balances: () =>
      last
        .filter((s) => s.balance !== null)
        .map((s) => [{ destination: s.name }, Number(s.balance)] as [{ destination: string }, number]),
    start() {
      stopped = false;
      // The check at start has just run: log what it found once, then beat every interval.
      for (const state of last)
        if (state.balance !== null && state.balance < minBalanceWei)
          logger.warn('signer balance low', {
            destination: state.name,
            balance_wei: state.balance.toString(),
            floor_wei: minBalanceWei.toString(),
          });
      schedule();
    },
    stop() {
      stopped = true;
      clock.clearTimeout(timer);
    },
  };
}
