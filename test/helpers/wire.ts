/**
 * Test-side readers of the three wire formats (test/helpers/builders.ts writes them), written from
 * the Solidity sources and kept apart from lib/ so the e2e tests do not trust the decoder they test:
 * - Hyperlane message v3: hyperlane-monorepo solidity/contracts/libs/Message.sol
 * - CCTP V2 message: circlefin/evm-cctp-contracts src/messages/v2/MessageV2.sol
 * - CCTP V2 burn message: circlefin/evm-cctp-contracts src/messages/v2/BurnMessageV2.sol
 * Each is an `abi.encodePacked` of fixed-size fields followed by one dynamic tail.
 */
import { hexToBigInt, hexToNumber, keccak256, size, slice, type Hex } from 'viem';

/** Message.sol: version u8 @0, nonce u32 @1, origin u32 @5, sender b32 @9, destination u32 @41, recipient b32 @45, body @77. */
export function readHyperlaneMessage(message: Hex) {
  if (size(message) < 77) throw new Error(`Hyperlane message too short: ${size(message)} bytes`);
  return {
    id: keccak256(message),
    version: hexToNumber(slice(message, 0, 1)),
    nonce: hexToNumber(slice(message, 1, 5)),
    origin: hexToNumber(slice(message, 5, 9)),
    sender: slice(message, 9, 41),
    destination: hexToNumber(slice(message, 41, 45)),
    recipient: slice(message, 45, 77),
    body: size(message) === 77 ? '0x' : slice(message, 77),
  };
}

/** MessageV2.sol field table: version @0, sourceDomain @4, destinationDomain @8, nonce @12, sender @44, recipient @76, destinationCaller @108, minFinalityThreshold @140, finalityThresholdExecuted @144, messageBody @148. */
export function readCctpV2Message(message: Hex) {
  if (size(message) < 148) throw new Error(`CCTP V2 message too short: ${size(message)} bytes`);
  return {
    version: hexToNumber(slice(message, 0, 4)),
    sourceDomain: hexToNumber(slice(message, 4, 8)),
    destinationDomain: hexToNumber(slice(message, 8, 12)),
    nonce: slice(message, 12, 44),
    sender: slice(message, 44, 76),
    recipient: slice(message, 76, 108),
    destinationCaller: slice(message, 108, 140),
    minFinalityThreshold: hexToNumber(slice(message, 140, 144)),
    finalityThresholdExecuted: hexToNumber(slice(message, 144, 148)),
    messageBody: size(message) === 148 ? '0x' : slice(message, 148),
  };
}

/** BurnMessageV2.sol field table: version @0, burnToken @4, mintRecipient @36, amount @68, messageSender @100, maxFee @132, feeExecuted @164, expirationBlock @196, hookData @228. */
export function readBurnMessageV2(body: Hex) {
  if (size(body) < 228) throw new Error(`BurnMessageV2 too short: ${size(body)} bytes`);
  return {
    version: hexToNumber(slice(body, 0, 4)),
    burnToken: slice(body, 4, 36),
    mintRecipient: slice(body, 36, 68),
    amount: hexToBigInt(slice(body, 68, 100)),
    messageSender: slice(body, 100, 132),
    maxFee: hexToBigInt(slice(body, 132, 164)),
    feeExecuted: hexToBigInt(slice(body, 164, 196)),
    expirationBlock: hexToBigInt(slice(body, 196, 228)),
    hookData: size(body) === 228 ? '0x' : slice(body, 228),
  };
}
