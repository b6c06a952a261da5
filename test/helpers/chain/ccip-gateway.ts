/**
 * A local EIP-3668 gateway standing in for Hyperlane's CCTP attestation service (which asks
 * Circle's Iris API), on 127.0.0.1 port 0. It speaks the service's protocol:
 * `POST /cctp/getCctpAttestation` with `{"sender","data"}` and
 * `GET /cctp/getCctpAttestation/{sender}/{data}.json`, where `data` is the CCIP-read callData of
 * TokenBridgeCctpV2 (`getCCTPAttestation(bytes message)`, the Hyperlane message); it answers
 * `{"data": abi.encode(cctpMessage, attestation)}`, the ISM metadata, or `{"error": …}` with
 * HTTP 500 like the service.
 *
 * Where the service asks Hyperlane's explorer for the dispatch transaction and Circle for the
 * attestation, the gateway asks the origin node: the Mailbox's `DispatchId(id)` log names the
 * transaction, and the transmitter's `MessageSent` in its receipt is the burn, "attested" with
 * Circle's nonce derived from where that log is (unique per burn, the same on every request) and
 * an empty attestation (the package's MockCircleMessageTransmitter checks no signature).
 *
 * Tests drive it: `respond(mode, times)` makes the next requests answer pending (404, or 500
 * "CCTP attestation is pending" as the service does), a 500, garbage, or hang; `requests()`
 * counts what arrived.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  concat,
  decodeEventLog,
  decodeFunctionData,
  encodeFunctionResult,
  encodePacked,
  keccak256,
  numberToHex,
  parseAbi,
  size,
  slice,
  toEventSelector,
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
} from 'viem';
import { readBurnMessageV2, readCctpV2Message, readHyperlaneMessage } from '../fixtures/wire.ts';

/** TokenBridgeCctpBase.sol's `CctpService`: the call the router's OffchainLookup encodes. */
export const CCTP_SERVICE_ABI = parseAbi([
  'function getCCTPAttestation(bytes _message) view returns (bytes cctpMessage, bytes attestation)',
]);
const MESSAGE_SENT = parseAbi(['event MessageSent(bytes message)']);
const MESSAGE_SENT_TOPIC = toEventSelector(MESSAGE_SENT[0]);
const DISPATCH_ID = parseAbi(['event DispatchId(bytes32 indexed messageId)']);

/** MessageV2.sol: the nonce at 12..44 and finalityThresholdExecuted at 144..148, set by Circle. */
function attest(message: Hex, nonce: Hex, finalityThresholdExecuted: number): Hex {
  return concat([
    slice(message, 0, 12),
    nonce,
    slice(message, 44, 144),
    numberToHex(finalityThresholdExecuted, { size: 4 }),
    slice(message, 148),
  ]);
}

/**
 * The ISM metadata for a Hyperlane token message sent through TokenBridgeCctpV2 in `txHash`:
 * the burn whose sender, mint recipient and amount are the Hyperlane message's, attested.
 * Throws when the origin receipt holds no such burn.
 */
export async function cctpAttestationMetadata(
  origin: PublicClient,
  transmitters: readonly string[],
  txHash: Hash,
  hyperlaneMessage: Hex,
): Promise<Hex> {
  const message = readHyperlaneMessage(hyperlaneMessage);
  // Hyperlane TokenMessage: recipient word, amount word, then optional metadata.
  if (size(message.body) < 64) throw new Error(`message ${message.id} is not a token message`);
  const recipient = slice(message.body, 0, 32);
  const amount = BigInt(slice(message.body, 32, 64));
  const receipt = await origin.getTransactionReceipt({ hash: txHash });
  const from = new Set(transmitters.map((a) => a.toLowerCase()));
  for (const log of receipt.logs) {
    if (!from.has(log.address.toLowerCase()) || log.topics[0] !== MESSAGE_SENT_TOPIC) continue;
    const sent = decodeEventLog({ abi: MESSAGE_SENT, topics: log.topics, data: log.data, strict: true }).args.message;
    const cctp = readCctpV2Message(sent);
    if (cctp.version !== 1 || size(cctp.messageBody) < 228) continue;
    const burn = readBurnMessageV2(cctp.messageBody);
    if (burn.messageSender !== message.sender || burn.mintRecipient !== recipient || burn.amount !== amount) continue;
    const nonce = keccak256(encodePacked(['bytes32', 'uint256'], [txHash, BigInt(log.logIndex)]));
    const attested = attest(sent, nonce, cctp.minFinalityThreshold);
    return encodeFunctionResult({
      abi: CCTP_SERVICE_ABI,
      functionName: 'getCCTPAttestation',
      result: [attested, '0x'],
    });
  }
  throw new Error(`no CCTP burn for message ${message.id} in ${txHash}`);
}

/**
 * What the next requests get instead of the answer:
 * - `pending-404`: 404 `{"error":"not found"}`
 * - `pending-500`: 500 `{"error":"CCTP attestation is pending"}` (Hyperlane's service until Circle attests)
 * - `error-500`: 500 `{"error":"internal error"}`
 * - `garbage`: 200 `{"data":"not hex"}`
 * - `hang`: reads the request and never answers
 */
export type GatewayMode = 'answer' | 'pending-404' | 'pending-500' | 'error-500' | 'garbage' | 'hang';

export interface CcipGatewayOptions {
  /** The origin node and its Mailbox, where the dispatches are. */
  origin: PublicClient;
  mailbox: Address;
  /** The origin's CCTP MessageTransmitter(s); `setTransmitters` once deployed. */
  transmitters?: readonly Address[];
}

export interface CcipGateway {
  /** The POST form, as Hyperlane's routers are configured: `http://127.0.0.1:PORT/cctp/getCctpAttestation`. */
  url: string;
  /** The GET template: `…/cctp/getCctpAttestation/{sender}/{data}.json`. */
  getUrl: string;
  setTransmitters(transmitters: readonly Address[]): void;
  /** The next `times` requests (default: all) are answered as `mode`; then answers again. */
  respond(mode: GatewayMode, times?: number): void;
  /** The next requests are answered as each step says, in order (`times` requests each); then answers again. */
  respondInOrder(steps: ReadonlyArray<readonly [GatewayMode, number]>): void;
  /** Requests received so far (any path, any outcome). */
  requests(): number;
  /** Requests answered with metadata. */
  answered(): number;
  close(): Promise<void>;
}

const MAX_BODY = 1024 * 1024;
const POST_PATH = '/cctp/getCctpAttestation';
const GET_PATH = /^\/cctp\/getCctpAttestation\/(0x[0-9a-fA-F]{40})\/(0x[0-9a-fA-F]*)\.json$/;

function reply(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    total += (chunk as Buffer).length;
    if (total > MAX_BODY) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function startCcipGateway(opts: CcipGatewayOptions): Promise<CcipGateway> {
  let transmitters: readonly Address[] = opts.transmitters ?? [];
  const modes: { mode: GatewayMode; left: number }[] = [];
  let received = 0;
  let answered = 0;

  function nextMode(): GatewayMode {
    const head = modes[0];
    if (!head) return 'answer';
    head.left -= 1;
    if (head.left <= 0) modes.shift();
    return head.mode;
  }

  /** The origin transaction that dispatched `message`, from the Mailbox's DispatchId log. */
  async function dispatchTx(message: Hex): Promise<Hash | undefined> {
    const logs = await opts.origin.getLogs({
      address: opts.mailbox,
      event: DISPATCH_ID[0],
      args: { messageId: keccak256(message) },
      fromBlock: 0n,
      toBlock: 'latest',
    });
    return logs[0]?.transactionHash ?? undefined;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    received += 1;
    const path = (req.url ?? '').split('?')[0];
    let data: string | undefined;
    if (req.method === 'POST' && path === POST_PATH) {
      const body = await readBody(req);
      if (body === undefined) return reply(res, 413, { error: 'body too large' });
      try {
        const parsed = JSON.parse(body) as { data?: unknown };
        if (typeof parsed.data === 'string') data = parsed.data;
      } catch {
        // below: missing callData
      }
    } else if (req.method === 'GET') {
      data = GET_PATH.exec(path)?.[2];
    } else {
      return reply(res, 404, { error: 'not found' });
    }
    if (!data) return reply(res, 400, { error: 'Missing callData' });

    const mode = nextMode();
    if (mode === 'hang') return; // the socket stays open until close()
    if (mode === 'pending-404') return reply(res, 404, { error: 'not found' });
    if (mode === 'pending-500') return reply(res, 500, { error: 'CCTP attestation is pending' });
    if (mode === 'error-500') return reply(res, 500, { error: 'internal error' });
    if (mode === 'garbage') return reply(res, 200, { data: 'not hex' });

    let message: Hex;
    try {
      const call = decodeFunctionData({ abi: CCTP_SERVICE_ABI, data: data as Hex });
      message = call.args[0];
    } catch {
      return reply(res, 500, { error: 'invalid callData' });
    }
    const txHash = await dispatchTx(message);
    // Not dispatched (or not mined) yet: the explorer does not know it either. Not ready.
    if (!txHash) return reply(res, 404, { error: 'dispatch not found' });
    const metadata = await cctpAttestationMetadata(opts.origin, transmitters, txHash, message);
    answered += 1;
    reply(res, 200, { data: metadata });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) reply(res, 500, { error: err instanceof Error ? err.message : String(err) });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    url: `${base}${POST_PATH}`,
    getUrl: `${base}${POST_PATH}/{sender}/{data}.json`,
    setTransmitters(list) {
      transmitters = [...list];
    },
    respond(mode, times = Infinity) {
      modes.length = 0;
      if (mode !== 'answer') modes.push({ mode, left: times });
    },
    respondInOrder(steps) {
      modes.length = 0;
      for (const [mode, times] of steps) modes.push({ mode, left: times });
    },
    requests: () => received,
    answered: () => answered,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
