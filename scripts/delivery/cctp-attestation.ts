/**
 * A local stand-in for Circle's attestation service, for the CCTP ISM of Hyperlane's
 * TokenBridgeCctpV2 on local nodes. In production a relayer follows the ISM's CCIP-read
 * `OffchainLookup` to Hyperlane's CCTP service, which asks Circle's Iris API for the burn's
 * message by source domain and origin transaction hash, with Circle's nonce filled in and the
 * attesters' signatures. Here the origin node itself answers: the message is the transmitter's
 * `MessageSent` in the origin receipt, the nonce is derived from where that log is (unique per
 * burn, the same for every worker that asks), and the attestation is empty (the package's
 * MockCircleMessageTransmitter does not check signatures). The ISM's metadata is
 * `abi.encode(cctpMessage, attestation)` (TokenBridgeCctpBase.verify).
 */
import {
  concat,
  decodeEventLog,
  encodeAbiParameters,
  encodePacked,
  keccak256,
  numberToHex,
  parseAbi,
  size,
  slice,
  toEventSelector,
  type Hash,
  type Hex,
  type PublicClient,
} from 'viem';
import { readBurnMessageV2, readCctpV2Message, readHyperlaneMessage } from '../../test/e2e/wire.ts';

const MESSAGE_SENT = parseAbi(['event MessageSent(bytes message)']);
const MESSAGE_SENT_TOPIC = toEventSelector(MESSAGE_SENT[0]);

/** MessageV2.sol: the nonce at 12..44 and finalityThresholdExecuted at 144..148, set by Circle. */
function attest(message: Hex, nonce: Hex, finalityThresholdExecuted: number): Hex {
  return concat([slice(message, 0, 12), nonce, slice(message, 44, 144), numberToHex(finalityThresholdExecuted, { size: 4 }), slice(message, 148)]);
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
    return encodeAbiParameters([{ type: 'bytes' }, { type: 'bytes' }], [attested, '0x']);
  }
  throw new Error(`no CCTP burn for message ${message.id} in ${txHash}`);
}
