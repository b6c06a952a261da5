/**
 * Status events: GET /relay/{message_id}/events and GET /relay/events?origin_chain=&tx_hash=
 * (docs/api.md#status-events), each stream following the outbox's change feed (docs/outbox.md#change-feed).
 */
import type { IncomingMessage } from 'node:http';
import type { ChangeFeed } from '../outbox/change-feed.ts';
import { txKey } from '../outbox/change-feed.ts';
import type { Clock } from '../clock.ts';
import { RelayError } from '../errors/classes.ts';
import { isHexOfLength } from '../codec/hex.ts';
import { createGasPolicySelector } from '../gas/policy.ts';
import { versionedStatusJson } from '../relay/message-status.ts';
import type { MessageStatus, Outbox, VersionedReads, VersionedRecord } from '../outbox/index.ts';
import { callStore } from '../store/bundle.ts';
import type { ChainConfig, GasPaymentEnforcement } from '../types.ts';
import type { Client } from './client-address.ts';
import type { Exchange } from './exchange.ts';
import { query } from './exchange.ts';
import type { Route } from './router.ts';
import { createStreamRegistry, type Stream } from './stream-registry.ts';
import { txQuery } from './status.ts';

/** What the streams read and follow. */
export type EventOutbox = Partial<VersionedReads> &
  Partial<Pick<Outbox, 'gasPayments'>> & { readonly changes?: ChangeFeed };

export interface EventStreamOptions {
  outbox: EventOutbox;
  chains: ReadonlyMap<string, ChainConfig>;
  clock: Clock;
  /** For each message's `gas_payment`, as GET /relay/{message_id} shows it. */
  gasPaymentEnforcement?: readonly GasPaymentEnforcement[];
  /** Streams open at once, in all and per client. */
  maxSubscribers: number;
  maxSubscribersPerClient: number;
  /** Every stream ends this long after it started (server.streamMaxSeconds). */
  maxLifetimeMs: number;
  /** A transaction stream still without messages ends this long after it started (server.txStreamWaitSeconds). */
  emptyWaitMs: number;
  /** The blocks a request counts in (lib/http/client-address.ts). */
  clientOf(req: IncomingMessage): Client;
  /** Runs before a stream's request is read (the read budget); throws the RelayError that refuses it. */
  admit?(ex: Exchange): void | Promise<void>;
}

export interface EventStreams {
  /** The two routes, when the outbox can be followed (none otherwise). */
  routes: Route[];
  /** Streams open now. */
  open(): number;
  /** Ends every stream (shutdown); streams asked for afterwards are refused with 503. */
  close(): void;
}

const FINAL: ReadonlySet<MessageStatus> = new Set(['delivered', 'failed']);

/** Last-Event-ID as version numbers ('.'-separated), or undefined when absent or malformed. */
export function parseEventId(value: string | string[] | undefined): number[] | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 4096) return undefined;
  const parts = value.split('.');
  if (!parts.every((part) => /^\d{1,15}$/.test(part))) return undefined;
  return parts.map(Number);
}

export function createEventStreams(options: EventStreamOptions): EventStreams {
  const { outbox, chains, clock, clientOf } = options;
  const changes = outbox.changes;
  const getVersioned = outbox.getVersioned?.bind(outbox);
  const byTxVersioned = outbox.byTxVersioned?.bind(outbox);
  const readPayments = outbox.gasPayments?.bind(outbox);
  const selectPolicy = createGasPolicySelector(options.gasPaymentEnforcement ?? []);
  const json = (record: VersionedRecord) => versionedStatusJson(record, selectPolicy);

  /** The records with their payments: an outbox whose versioned reads do not bring them is asked once more. */
  async function withPayments(records: VersionedRecord[]): Promise<VersionedRecord[]> {
    if (readPayments === undefined || records.every((r) => r.gasPayments !== undefined)) return records;
    const payments = await readPayments(records.map((r) => r.id));
    return records.map((r) => ({ ...r, gasPayments: payments.filter((p) => p.messageId === r.id) }));
  }
  const registry = createStreamRegistry({
    changes,
    clock,
    maxSubscribers: options.maxSubscribers,
    maxSubscribersPerClient: options.maxSubscribersPerClient,
  });
  const { follow, write } = registry;

  /**
   * Opens a stream for `ex`: `read` reads the state, `step` gives its event (none when nothing is
   * to be sent) and whether it is final; `empty` (transaction streams) runs the wait while true.
   */
  async function serve<S>(
    ex: Exchange,
    keys: string[],
    read: () => Promise<S>,
    step: (state: S, stream: Stream) => { event?: string; done: boolean },
    resumeDone: (state: S) => boolean,
    empty?: (state: S) => boolean,
  ): Promise<void> {
    if (changes === undefined) throw new RelayError('not_found', 'this relayer does not keep message statuses');
    const release = registry.reserve(clientOf(ex.req));
    let reading = false;
    let again = false;
    let started = false;
    const stream: Stream = {
      ex,
      keys: new Set(),
      changed() {
        // Before the first event, or during a read: read once more after it.
        if (!started || reading) again = true;
        else void refresh();
      },
    };
    const end = () => void (ex.res.writableEnded || ex.res.end());
    let stopWaiting = () => {};
    const remove = () => {
      registry.remove(stream);
      release();
    };
    const show = (state: S) => {
      const { event, done } = step(state, stream);
      if (event !== undefined) write(stream, event);
      if (done) return end();
      if (empty !== undefined && !empty(state)) stopWaiting();
    };

    async function refresh(): Promise<void> {
      reading = true;
      try {
        do {
          again = false;
          const state = await callStore(read);
          if (!registry.has(stream)) return;
          show(state);
          if (ex.res.writableEnded) return;
        } while (again);
      } catch {
        // The store failed: end the stream; EventSource reconnects with Last-Event-ID and resumes.
        end();
      } finally {
        reading = false;
      }
    }

    registry.add(stream);
    ex.res.once('close', remove);
    for (const key of keys) follow(stream, key);
    try {
      // Following before reading: a change committed after the read is heard.
      await callStore(() => changes.ready());
      const state = await callStore(read);
      if (resumeDone(state)) {
        // The client saw the final state already: 204 tells EventSource to stop reconnecting.
        remove();
        ex.res.writeHead(204, {
          'Cache-Control': 'no-store',
          'X-Request-Id': ex.id,
          Allow: ex.matched?.allow ?? 'GET',
        });
        ex.res.end();
        return;
      }
      ex.res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Accel-Buffering': 'no',
        'X-Content-Type-Options': 'nosniff',
        'X-Request-Id': ex.id,
      });
      if (ex.req.method === 'HEAD') return void ex.res.end();
      ex.res.flushHeaders();
      registry.beating();
      started = true;
      // EventSource reconnects once this ends, with Last-Event-ID: nothing is lost.
      registry.after(stream, options.maxLifetimeMs, end);
      if (empty?.(state))
        stopWaiting = registry.after(stream, options.emptyWaitMs, () => {
          write(stream, `event: timeout\ndata: ${emptyTimeout}\n\n`);
          end();
        });
      show(state);
      if (ex.res.writableEnded) return;
      if (again) void refresh();
    } catch (error) {
      remove();
      throw error;
    }
  }

  async function messageEvents(ex: Exchange): Promise<void> {
    await options.admit?.(ex);
    const id = ex.params.message_id;
    if (!isHexOfLength(id, 32))
      throw new RelayError('invalid_request', 'message_id must be 0x followed by 64 hex digits');
    if (getVersioned === undefined) throw new RelayError('not_found', 'this relayer does not keep message statuses');
    const resume = parseEventId(ex.req.headers['last-event-id']);
    let sent = resume?.length === 1 ? resume[0] : -1;
    const read = async () => {
      const record = await getVersioned(id);
      if (record === undefined)
        throw new RelayError('not_found', 'no message with this id was accepted by this relayer');
      return (await withPayments([record]))[0];
    };
    await serve<VersionedRecord>(
      ex,
      [id.toLowerCase()],
      read,
      (record) => {
        if (record.version <= sent) return { done: FINAL.has(record.status) };
        sent = record.version;
        return {
          event: `event: status\nid: ${record.version}\ndata: ${JSON.stringify(json(record))}\n\n`,
          done: FINAL.has(record.status),
        };
      },
      (record) => record.version <= sent && FINAL.has(record.status),
    );
  }

  async function txEvents(ex: Exchange): Promise<void> {
    if (byTxVersioned === undefined) throw new RelayError('not_found', 'this relayer does not keep message statuses');
    await options.admit?.(ex);
    const { chain, txHash } = txQuery(query(ex), chains);
    ex.originChain = chain.name;
    ex.txHash = txHash;
    const resumed = parseEventId(ex.req.headers['last-event-id']);
    let sent = resumed ?? [];
    // Without Last-Event-ID the first state is sent whatever it is (an empty list too).
    let first = resumed === undefined;
    const key = txKey(chain.name, txHash);
    const allFinal = (records: VersionedRecord[]) => records.length > 0 && records.every((r) => FINAL.has(r.status));
    const newer = (records: VersionedRecord[]) =>
      records.length !== sent.length || records.some((r, i) => r.version > sent[i]);
    await serve<VersionedRecord[]>(
      ex,
      [key],
      async () => withPayments(await byTxVersioned(chain.name, txHash)),
      (records, stream) => {
        // Messages followed from now on; a change of theirs made since the read was not heard:
        // read once more.
        const unseen = records.filter((r) => !stream.keys.has(r.id));
        for (const r of unseen) follow(stream, r.id);
        if (unseen.length > 0) stream.changed();
        if (!first && !newer(records)) return { done: allFinal(records) };
        first = false;
        sent = records.map((r) => r.version);
        const data = JSON.stringify({ messages: records.map(json) });
        return { event: `event: messages\nid: ${sent.join('.')}\ndata: ${data}\n\n`, done: allFinal(records) };
      },
      (records) => !newer(records) && allFinal(records),
      (records) => records.length === 0,
    );
  }

  /** The `timeout` event's data: an error body, as a 408 would carry it. */
  const emptyTimeout = JSON.stringify({
    reason: 'timeout',
    message: `no message of this transaction was accepted within ${Math.round(options.emptyWaitMs / 1000)} s; relay it (POST /relay), then watch it again`,
  });

  const routes: Route[] =
    changes === undefined
      ? []
      : [
          { path: '/relay/events', GET: txEvents },
          { path: '/relay/{message_id}/events', GET: messageEvents },
        ];

  return {
    routes,
    open: registry.size,
    close: registry.close,
  };
}
