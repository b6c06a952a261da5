/**
 * Hyperlane's real gas payment contracts on an anvil node (docs/gas.md#gas-payment-enforcement):
 * `StorageGasOracle` and `InterchainGasPaymaster` from @hyperlane-xyz/core (bytecode from their
 * typechain factories), the paymaster configured for the destination domains a test names, and
 * PaidTransferStandIn (test/helpers/chain/contracts/), a CCTP V2 transfer over the Mailbox that pays
 * the paymaster for its message in the same transaction. Top-ups are the paymaster's own
 * `payForGas`, sent by the dev account later.
 */
import { pad, type Address, type Hash } from 'viem';
import { DEV_ACCOUNT, FIXED_GAS, type Chain } from './clients.ts';
import { hyperlaneArtifact } from './hyperlane.ts';
import { compiledContract } from './solidity.ts';
import { CCTP_LOCAL_DOMAIN, CCTP_REMOTE_DOMAIN, REMOTE_TOKEN_MESSENGER } from './stand-ins.ts';

/** The oracle's scale: 1e10 is one remote token per local token (InterchainGasPaymaster TOKEN_EXCHANGE_RATE_SCALE). */
const EXCHANGE_RATE_ONE = 10_000_000_000n;
/** The remote gas price the oracle quotes: 1 gwei. */
export const REMOTE_GAS_PRICE = 1_000_000_000n;

export const igpArtifacts = {
  paymaster: () => hyperlaneArtifact('hooks/igp/InterchainGasPaymaster'),
  oracle: () => hyperlaneArtifact('hooks/igp/StorageGasOracle'),
};

export interface GasPaymentFixture {
  /** The InterchainGasPaymaster: the relayer's `interchainGasPaymaster` of the origin chain. */
  igp: Address;
  oracle: Address;
  /** A CCTP V2 transmitter stand-in that pays: also a `cctpMessageTransmitter` of the origin chain. */
  payer: Address;
  /** What the paymaster charges for `gas` to `destination` (its own quoteGasPayment). */
  quote(destination: number, gas: bigint): Promise<bigint>;
  /**
   * A transfer to `destination` paying for `gas` of destination gas for `payDestination` (default
   * the same) in the same transaction; gas 0 pays nothing. Returns the transaction hash, mined.
   */
  sendPaid(t: {
    destination: number;
    recipient: Address;
    amount: bigint;
    gas: bigint;
    payDestination?: number;
  }): Promise<Hash>;
  /** A later payment for a message already sent (a top-up), by the dev account. Mined. */
  topUp(messageId: `0x${string}`, destination: number, gas: bigint): Promise<Hash>;
}

/** Deploys the oracle and the paymaster (destinations `domains`, no overhead) and the paying stand-in. */
export async function deployGasPayment(chain: Chain, mailbox: Address, domains: number[]): Promise<GasPaymentFixture> {
  const oracleA = igpArtifacts.oracle();
  const igpA = igpArtifacts.paymaster();
  const oracle = await chain.deploy(oracleA.abi, oracleA.bytecode);
  const configs = domains.map((remoteDomain) => ({
    remoteDomain,
    tokenExchangeRate: EXCHANGE_RATE_ONE,
    gasPrice: REMOTE_GAS_PRICE,
  }));
  await expectSuccess(chain.callAndWait(oracle, oracleA.abi, 'setRemoteGasDataConfigs', [configs]), 'oracle config');
  const igp = await chain.deploy(igpA.abi, igpA.bytecode);
  await expectSuccess(chain.callAndWait(igp, igpA.abi, 'initialize', [DEV_ACCOUNT, DEV_ACCOUNT]), 'IGP initialize');
  const gasConfigs = domains.map((remoteDomain) => ({ remoteDomain, config: { gasOracle: oracle, gasOverhead: 0n } }));
  await expectSuccess(chain.callAndWait(igp, igpA.abi, 'setDestinationGasConfigs', [gasConfigs]), 'IGP gas configs');
  const payerC = compiledContract('PaidTransferStandIn');
  const payer = await chain.deploy(payerC.abi, payerC.bytecode, [
    mailbox,
    CCTP_LOCAL_DOMAIN,
    CCTP_REMOTE_DOMAIN,
    REMOTE_TOKEN_MESSENGER,
  ]);

  const quote = (destination: number, gas: bigint) =>
    chain.publicClient.readContract({
      address: igp,
      abi: igpA.abi,
      functionName: 'quoteGasPayment',
      args: [destination, gas],
    }) as Promise<bigint>;

  async function send(address: Address, abi: typeof igpA.abi, functionName: string, args: unknown[], value: bigint) {
    const hash = await chain.wallet.writeContract({
      address,
      abi,
      functionName,
      args,
      value,
      gas: FIXED_GAS,
      chain: chain.viemChain,
      account: DEV_ACCOUNT,
    });
    await expectSuccess(chain.receipt(hash), functionName);
    return hash;
  }

  return {
    igp,
    oracle,
    payer,
    quote,
    async sendPaid(t) {
      const payDestination = t.payDestination ?? t.destination;
      const value = t.gas === 0n ? 0n : await quote(payDestination, t.gas);
      return send(
        payer,
        payerC.abi,
        'sendPaid',
        [t.destination, pad(t.recipient), t.amount, igp, payDestination, t.gas],
        value,
      );
    },
    async topUp(messageId, destination, gas) {
      return send(
        igp,
        igpA.abi,
        'payForGas',
        [messageId, destination, gas, DEV_ACCOUNT],
        await quote(destination, gas),
      );
    },
  };
}

async function expectSuccess(pending: Promise<{ status: string; transactionHash: Hash }>, what: string): Promise<void> {
  const receipt = await pending;
  if (receipt.status !== 'success') throw new Error(`${what} reverted: ${receipt.transactionHash}`);
}
