/**
 * One local chain ready for relaying: anvil, a Hyperlane Mailbox for domain 1 and the stand-ins.
 * Shared by the e2e tests and `npm run demo`.
 */
import { startAnvil, type Anvil } from './anvil.ts';
import { connectChain, type Chain } from './chain.ts';
import { deployHyperlane, type HyperlaneDeployment } from './hyperlane.ts';
import { deployStandIns, type StandIns } from './stand-ins.ts';

/** The Hyperlane domain of the anvil chain. */
export const ORIGIN_DOMAIN = 1;

export interface LocalChain {
  anvil: Anvil;
  chain: Chain;
  hyperlane: HyperlaneDeployment;
  standIns: StandIns;
}

/** Starts anvil and deploys everything; stops anvil again if a deployment fails. */
export async function startLocalChain(): Promise<LocalChain> {
  const anvil = await startAnvil();
  try {
    const chain = connectChain(anvil.rpcUrl);
    const hyperlane = await deployHyperlane(chain, ORIGIN_DOMAIN);
    const standIns = await deployStandIns(chain, hyperlane.mailbox);
    return { anvil, chain, hyperlane, standIns };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}
