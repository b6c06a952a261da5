/**
 * One server under test, in its own process so the load generator never shares its event loop.
 * Started by bench/http.ts, bench/merkle.ts and bench/memory.ts with child_process.fork:
 *
 *   node bench/server-child.ts <kind> [options JSON]
 *
 * kinds: `bare` (the peer: plain node:http answering "up" and JSON), `relay` (our server as
 * relayer-server wires it: metrics, a JSON log line per request to stdout (batched per event-loop turn), an outbox, the merkle
 * store when `merkle` is set), `merkle-peer` (a hand-written node:http + node:sqlite merkle endpoint
 * on its main thread), `rpc` (a JSON-RPC endpoint over node:http answering every receipt, for the
 * relay servers given `rpc`), `fetch-peer` and `agent-peer` (hand-written node:http endpoints doing
 * only the receipt fetch from `rpc`: with the global fetch, or node:http with a keep-alive Agent),
 * `pg-peer` (a hand-written node:http + pg endpoint doing POST /relay's durable work on `postgres`). It reports `{ port }` over IPC once listening, and answers
 * `{ type: 'memory', gc }` with process.memoryUsage() (after a full GC when asked).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Agent, request as httpRequest } from 'node:http';
import { createLineSink } from '../lib/node/log-sink.ts';
import { createRpcTransport } from '../lib/node/rpc-transport.ts';
import { createRelayServer } from '../lib/http/server.ts';
import { createLogger, silentLogger } from '../lib/log.ts';
import { createMemoryOutbox } from '../lib/outbox/index.ts';
import type { FetchLike, RpcFetch } from '../lib/rpc/client.ts';
import { openSqliteStore, type SqliteStore } from '../lib/sqlite/index.ts';
import { MIGRATIONS } from '../lib/sqlite/schema.ts';
import type { MerkleInsertion, RelayerConfig } from '../lib/types.ts';
import { testConfig } from '../test/helpers/fixtures/config.ts';
import { rpcReceipt, transferLogs } from '../test/helpers/fixtures/builders.ts';

export interface RelayChildOptions {
  /** 'memory' (default) or 'sqlite' (a fresh file in a temporary directory, synchronous=FULL). */
  outbox?: 'memory' | 'sqlite';
  /** Serve the merkle endpoints from a fresh SQLite file. */
  merkle?: boolean;
  /** Write the request log (JSON lines to stdout, as relayer-server does). Default true. */
  log?: boolean;
  /** A different message (nonce) per transaction, so a durable outbox really writes each. */
  distinctMessages?: boolean;
  relayApi?: Partial<RelayerConfig['relayApi']>;
  /** Server settings over the test config's (stream bounds, trusted proxies; bench/status-push.ts). */
  server?: Partial<RelayerConfig['server']>;
  /** Run on the shared PostgreSQL store at this URL (outbox, merkle, dedup, rate limiter), as a replica. */
  postgres?: string;
  /** The SQLite file to use instead of a fresh one (bench/store.ts locks it from another connection). */
  dbFile?: string;
  /** Fetch receipts from this JSON-RPC URL (a `rpc` child) instead of the instant in-process RPC. */
  rpc?: string;
  /** With `rpc`: the transport to it. 'node' (default) is relayer-server's, 'fetch' the global fetch. */
  transport?: 'node' | 'fetch';
  /** `pg-peer`'s pool size (ours takes `pool_size` in the `postgres` URL). Default 10. */
  poolSize?: number;
}

const TX_PLACEHOLDER = '0x' + 'ee'.repeat(32);

/**
 * An RPC that answers at once, in process: every transaction hash has a receipt with one CCTP
 * transfer (a MessageSent and a Dispatch), so POST /relay accepts one message per request.
 */
function instantRpc(distinctMessages: boolean): FetchLike {
  const answer = rpcAnswer(distinctMessages);
  return async (_url, init) =>
    new Response(answer(String(init.body)), { status: 200, headers: { 'content-type': 'application/json' } });
}

/** The JSON-RPC answer to an `eth_getTransactionReceipt` request body (about 3 KB). */
function rpcAnswer(distinctMessages: boolean): (requestBody: string) => string {
  const receipt = rpcReceipt(TX_PLACEHOLDER, transferLogs(1, { nonce: 0 }));
  const template = JSON.stringify({ jsonrpc: '2.0', id: 999_999_999, result: receipt });
  // The Dispatch data: offset word, length word, then version (1 byte) and the 4-byte nonce.
  const dispatchData = (receipt.logs as { data: string }[])[1].data;
  const nonceAt = 2 + 128 + 2;
  return (requestBody) => {
    const request = JSON.parse(requestBody) as { id: number; params: [string] };
    const hash = request.params[0];
    let text = template;
    if (distinctMessages) {
      text = text.replace(
        dispatchData,
        dispatchData.slice(0, nonceAt) + hash.slice(-8) + dispatchData.slice(nonceAt + 8),
      );
    }
    return text.split(TX_PLACEHOLDER).join(hash).replace('999999999', String(request.id));
  };
}

/** A JSON-RPC endpoint over node:http: every transaction has a receipt with one transfer. */
function rpcServer(distinctMessages: boolean): (req: IncomingMessage, res: ServerResponse) => void {
  const answer = rpcAnswer(distinctMessages);
  return (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = answer(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    });
  };
}

/**
 * The peers of the RPC transport bench: the minimal endpoint a user could write by hand that
 * takes {origin_chain, tx_hash}, fetches the receipt from `rpcUrl` and answers JSON, with no
 * validation, decoding, dedup or store. `fetch`: the global fetch; `agent`: node:http with a
 * keep-alive Agent (64 sockets, as our transport's default).
 */
function receiptPeer(rpcUrl: string, how: 'fetch' | 'agent'): (req: IncomingMessage, res: ServerResponse) => void {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const target = new URL(rpcUrl);
  let id = 0;
  const viaAgent = (body: string) =>
    new Promise<string>((resolve, reject) => {
      const call = httpRequest(
        {
          hostname: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          res.on('error', reject);
        },
      );
      call.on('error', reject);
      call.end(body);
    });
  const viaFetch = async (body: string) => {
    const res = await fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return res.text();
  };
  const get = how === 'fetch' ? viaFetch : viaAgent;
  return (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const { tx_hash } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { tx_hash: string };
      const answer = JSON.parse(
        await get(JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'eth_getTransactionReceipt', params: [tx_hash] })),
      ) as { result: { logs: unknown[] } };
      const text = JSON.stringify({ messages: [{ message_id: tx_hash, logs: answer.result.logs.length }] });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    });
  };
}

/** The pool and store relayer-server opens for a postgres:// URL (bin/lib/postgres.ts). */
async function openPostgres(url: string, config: RelayerConfig) {
  const { openPostgresFromUrl } = await import('../bin/lib/postgres.ts');
  return openPostgresFromUrl(url, config.relayApi, silentLogger);
}

function bare(): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': 2 }).end('up');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { tx_hash?: string };
      const text = JSON.stringify({ messages: [{ message_id: body.tx_hash, origin: 1, destination: 8453, nonce: 0 }] });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    });
  };
}

/**
 * The merkle peer of
 * BENCHMARKS.md#storage-off-the-event-loop-node-benchstorets-node-benchmerklets: the minimal
 * node:http + node:sqlite endpoint a user could write by hand. It parses the body and inserts
 * every record in one transaction on its main thread, with the same durability (WAL,
 * synchronous=FULL) and the same table as ours, without validation.
 */
function merklePeer(path: string): (req: IncomingMessage, res: ServerResponse) => void {
  const db = new DatabaseSync(path);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
  db.exec(MIGRATIONS[0]);
  const insert = db.prepare(
    'INSERT OR REPLACE INTO merkle_insertions (chain, leaf_index, insertion_block_number, message_id) VALUES (?, ?, ?, ?)',
  );
  return (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { merkle_tree_insertions: rows } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        merkle_tree_insertions: MerkleInsertion[];
      };
      db.exec('BEGIN IMMEDIATE');
      for (const r of rows) insert.run(r.chain, r.leaf_index, r.insertion_block_number, r.message_id);
      db.exec('COMMIT');
      const text = JSON.stringify({ count: rows.length, skipped: [] });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    });
  };
}

function fetchFor(options: RelayChildOptions): RpcFetch | undefined {
  if (options.rpc === undefined) return instantRpc(options.distinctMessages ?? false);
  // relayer-server's transport, or the library's default (the global fetch).
  return options.transport === 'fetch' ? undefined : createRpcTransport().fetch;
}

/**
 * The PostgreSQL peer (bench/postgres.ts): the minimal node:http + pg endpoint doing POST /relay's
 * durable work by hand: the receipt from the same instant in-process RPC as ours, the Mailbox
 * logs' data as the messages (sha256 as their id: no ABI decoding, no keccak, no validation beyond
 * the hash's form, no rate limit, metrics or log), a reservation in one statement with
 * synchronous_commit off, then the rows and the committed reservation in one durable statement,
 * the same durability as ours. Its own schema and tables, shaped like ours.
 */
async function pgPeer(url: string, poolSize: number): Promise<(req: IncomingMessage, res: ServerResponse) => void> {
  const { default: pg } = await import('pg');
  const { createHash } = await import('node:crypto');
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  const schema = `peer_${process.pid}`;
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema};
    CREATE TABLE IF NOT EXISTS ${schema}.dedup (key text PRIMARY KEY, token uuid NOT NULL, committed boolean NOT NULL, expires_at float8 NOT NULL);
    CREATE TABLE IF NOT EXISTS ${schema}.outbox (id text PRIMARY KEY, tx_hash text NOT NULL, raw bytea NOT NULL, enqueued_at float8 NOT NULL)`);
  const rpc = instantRpc(true);
  const mailbox = testConfig().chains.ethereum.mailbox.toLowerCase();
  const commitSql = `WITH ins AS (
      INSERT INTO ${schema}.outbox (id, tx_hash, raw, enqueued_at)
      SELECT id, $3, decode(raw, 'hex'), $4 FROM unnest($5::text[], $6::text[]) AS m(id, raw) ON CONFLICT (id) DO NOTHING
    )
    UPDATE ${schema}.dedup SET committed = true, expires_at = $4 + 1000 WHERE key = $1 AND token = $2`;
  return (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const answer = (status: number, value: unknown) => {
        const text = JSON.stringify(value);
        res
          .writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
          .end(text);
      };
      try {
        const { tx_hash: hash } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { tx_hash: string };
        if (!/^0x[0-9a-f]{64}$/.test(hash)) return answer(400, { reason: 'invalid_request' });
        const now = Date.now();
        const reserved = (await pool.query(`SET LOCAL synchronous_commit = off;
          INSERT INTO ${schema}.dedup AS d VALUES ('ethereum:${hash}', gen_random_uuid(), false, ${now + 15_000})
          ON CONFLICT (key) DO UPDATE SET token = excluded.token, committed = false, expires_at = excluded.expires_at WHERE d.expires_at <= ${now}
          RETURNING token`)) as unknown as { rows: { token: string }[] }[];
        const token = reserved[1].rows[0]?.token;
        if (token === undefined) return answer(429, { reason: 'duplicate_tx' });
        const response = await rpc('', {
          method: 'POST',
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionReceipt', params: [hash] }),
        });
        const { result } = (await response.json()) as { result: { logs: { address: string; data: string }[] } };
        const raws = result.logs.filter((log) => log.address.toLowerCase() === mailbox).map((log) => log.data.slice(2));
        const ids = raws.map((raw) => '0x' + createHash('sha256').update(raw).digest('hex'));
        await pool.query(commitSql, [`ethereum:${hash}`, token, hash, now, ids, raws]);
        answer(200, { messages: ids.map((id) => ({ message_id: id })) });
      } catch {
        answer(503, { reason: 'store_unavailable' });
      }
    });
  };
}

async function main(): Promise<void> {
  const [kind, json] = process.argv.slice(2);
  const options = JSON.parse(json ?? '{}') as RelayChildOptions;
  let port: number;
  let cleanup = () => {};
  if (kind === 'bare') {
    const server = createServer(bare());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  } else if (kind === 'relay') {
    const base = testConfig({ relayApi: options.relayApi, server: options.server });
    const config =
      options.rpc === undefined
        ? base
        : testConfig({
            relayApi: options.relayApi,
            server: options.server,
            chains: { ...base.chains, ethereum: { ...base.chains.ethereum, rpcUrls: [options.rpc] } },
          });
    let store: SqliteStore | undefined;
    if (options.outbox === 'sqlite' || options.merkle) {
      const dir = mkdtempSync(join(tmpdir(), 'relayer-bench-'));
      store = await openSqliteStore(options.dbFile ?? join(dir, 'relayer.db'));
      cleanup = () => {
        void store?.close();
        rmSync(dir, { recursive: true, force: true });
      };
    }
    let shared: Awaited<ReturnType<typeof openPostgres>> | undefined;
    if (options.postgres !== undefined) {
      shared = await openPostgres(options.postgres, config);
      const previous = cleanup;
      cleanup = () => {
        previous();
        void shared!.close();
      };
    }
    const relay = createRelayServer({
      config,
      ...(shared
        ? { store: shared.store }
        : {
            outbox: options.outbox === 'sqlite' ? store!.outbox : createMemoryOutbox(),
            merkle: options.merkle ? store!.merkle : undefined,
          }),
      fetch: fetchFor(options),
      logger:
        options.log === false
          ? silentLogger
          : createLogger({ level: 'info', write: createLineSink(process.stdout).write }),
    });
    port = (await relay.listen(0, '127.0.0.1')).port;
  } else if (kind === 'rpc' || kind === 'fetch-peer' || kind === 'agent-peer') {
    const handler =
      kind === 'rpc'
        ? rpcServer(options.distinctMessages ?? false)
        : receiptPeer(options.rpc!, kind === 'fetch-peer' ? 'fetch' : 'agent');
    const server = createServer({ keepAliveTimeout: 60_000 }, handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  } else if (kind === 'pg-peer') {
    const server = createServer(await pgPeer(options.postgres!, options.poolSize ?? 10));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  } else if (kind === 'merkle-peer') {
    const dir = mkdtempSync(join(tmpdir(), 'relayer-bench-peer-'));
    const server = createServer(merklePeer(join(dir, 'peer.db')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    cleanup = () => rmSync(dir, { recursive: true, force: true });
  } else {
    throw new Error(`unknown server kind ${kind}`);
  }
  process.on('message', (message: { type: string; gc?: boolean }) => {
    if (message.type === 'memory') {
      if (message.gc) (globalThis as { gc?: () => void }).gc?.();
      process.send!({ type: 'memory', ...process.memoryUsage() });
    }
  });
  process.on('disconnect', () => {
    cleanup();
    process.exit(0);
  });
  process.send!({ type: 'ready', port });
}

await main();
