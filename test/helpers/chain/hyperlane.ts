/**
 * The real Hyperlane contracts, from the @hyperlane-xyz/core devDependency: Mailbox, NoopIsm,
 * MerkleTreeHook and TestPostDispatchHook, deployed and wired the way
 * docs/design.md#tests-on-real-chains describes.
 *
 * The package ships ABI and bytecode inside its typechain factories, which import ethers v5 (not
 * installed here). The factory files are read as text instead: each holds
 * `const _abi = [...];` and `const _bytecode = "0x...";` and nothing of ethers is needed for those.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runInNewContext } from 'node:vm';
import { decodeEventLog, type Abi, type Address, type Hex } from 'viem';
import type { Chain } from './clients.ts';
import { DEV_ACCOUNT } from './clients.ts';

export interface Artifact {
  abi: Abi;
  bytecode: Hex;
}

const FACTORIES = 'dist/typechain/factories';

/** The package root: its exports map hides package.json, so go up from the main entry (dist/index.js). */
function packageRoot(): string {
  return dirname(dirname(fileURLToPath(import.meta.resolve('@hyperlane-xyz/core'))));
}

/**
 * Reads one typechain factory, e.g. `hooks/MerkleTreeHook` (under the package's contracts/) or
 * `@openzeppelin/contracts/...` (its vendored dependencies), without executing its imports.
 */
export function hyperlaneArtifact(path: string): Artifact {
  let artifact = artifacts.get(path);
  if (artifact === undefined) {
    artifact = readArtifact(path);
    artifacts.set(path, artifact);
  }
  return artifact;
}

/**
 * Read once per process: a factory file is up to a few hundred kB and its ABI is evaluated in a
 * fresh VM context, and the Mailbox's ABI is asked for on every dispatch and every receipt read.
 */
const artifacts = new Map<string, Artifact>();

function readArtifact(path: string): Artifact {
  const under = path.startsWith('@') ? path : `contracts/${path}`;
  const file = join(packageRoot(), FACTORIES, `${under}__factory.js`);
  const text = readFileSync(file, 'utf8');
  const abiText = text.match(/const _abi = (\[[\s\S]*?\n\]);\n/)?.[1];
  const bytecode = text.match(/const _bytecode = "(0x[0-9a-fA-F]+)";/)?.[1];
  if (!abiText || !bytecode) throw new Error(`unexpected typechain factory layout in ${file}`);
  // The ABI is a JS object literal (unquoted keys), not JSON; evaluate it with no globals.
  const abi = runInNewContext(`(${abiText})`, Object.create(null)) as Abi;
  return { abi, bytecode: bytecode as Hex };
}

export const mailboxArtifact = (): Artifact => hyperlaneArtifact('Mailbox');

export interface HyperlaneDeployment {
  domain: number;
  mailbox: Address;
  noopIsm: Address;
  merkleTreeHook: Address;
  testPostDispatchHook: Address;
}

/**
 * Deploys a Mailbox for `domain` with a NoopIsm as default ISM, a MerkleTreeHook as default hook
 * and a TestPostDispatchHook (fee 0) as required hook, owned by the dev account.
 */
export async function deployHyperlane(chain: Chain, domain: number): Promise<HyperlaneDeployment> {
  const mailboxA = mailboxArtifact();
  const noopIsmA = hyperlaneArtifact('isms/NoopIsm');
  const merkleA = hyperlaneArtifact('hooks/MerkleTreeHook');
  const testHookA = hyperlaneArtifact('test/TestPostDispatchHook');

  const mailbox = await chain.deploy(mailboxA.abi, mailboxA.bytecode, [domain]);
  const noopIsm = await chain.deploy(noopIsmA.abi, noopIsmA.bytecode);
  const merkleTreeHook = await chain.deploy(merkleA.abi, merkleA.bytecode, [mailbox]);
  const testPostDispatchHook = await chain.deploy(testHookA.abi, testHookA.bytecode);

  // Zero fee, said explicitly: dispatch must not need msg.value.
  await expectSuccess(chain.callAndWait(testPostDispatchHook, testHookA.abi, 'setFee', [0n]), 'setFee');
  await expectSuccess(
    chain.callAndWait(mailbox, mailboxA.abi, 'initialize', [
      DEV_ACCOUNT,
      noopIsm,
      merkleTreeHook,
      testPostDispatchHook,
    ]),
    'Mailbox.initialize',
  );
  return { domain, mailbox, noopIsm, merkleTreeHook, testPostDispatchHook };
}

async function expectSuccess(pending: Promise<{ status: string; transactionHash: Hex }>, what: string): Promise<void> {
  const receipt = await pending;
  if (receipt.status !== 'success') throw new Error(`${what} reverted: ${receipt.transactionHash}`);
}

/** What the Mailbox itself logged in one receipt, in log order; logs of other addresses are skipped. */
export function mailboxLogs(
  receipt: { logs: readonly { address: Address; topics: readonly Hex[]; data: Hex }[] },
  mailbox: Address,
) {
  const { abi } = mailboxArtifact();
  const messages: Hex[] = [];
  const ids: Hex[] = [];
  for (const log of receipt.logs) {
    if (log.address.toLowerCase() !== mailbox.toLowerCase()) continue;
    const event = decodeEventLog({ abi, topics: log.topics as [Hex, ...Hex[]], data: log.data, strict: true });
    if (event.eventName === 'Dispatch') messages.push((event.args as unknown as { message: Hex }).message);
    if (event.eventName === 'DispatchId') ids.push((event.args as unknown as { messageId: Hex }).messageId);
  }
  return { messages, ids };
}

/** The transactions in which `mailbox` logged `ProcessId(id)`: how often the chain delivered the message, and by what. */
export async function processTransactions(chain: Chain, mailbox: Address, id: string): Promise<Hex[]> {
  const logs = await chain.publicClient.getContractEvents({
    address: mailbox,
    abi: mailboxArtifact().abi,
    eventName: 'ProcessId',
    args: { messageId: id as Hex },
    fromBlock: 0n,
  });
  return logs.map((l) => l.transactionHash as Hex);
}
