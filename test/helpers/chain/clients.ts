/**
 * viem clients for one anvil node, with the few helpers the e2e tests and the demo need: deploy a
 * contract, send a transaction and wait for its receipt, hold and release mining.
 */
import {
  BaseError,
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  NonceTooLowError,
  type Abi,
  type Account,
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
  type Tokens,
  type TransactionReceipt,
  type Transport,
  type Chain as ViemChain,
  type WalletClient,
} from 'viem';

/** anvil's first dev account (mnemonic "test … junk"); anvil signs for it over eth_sendTransaction. */
export const DEV_ACCOUNT: Address = getAddress('0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266');

/**
 * Gas for transactions that must reach the chain even when they revert: with a gas limit given,
 * neither viem nor anvil estimates, and estimation would refuse a reverting call.
 */
export const FIXED_GAS = 5_000_000n;

export interface Chain {
  rpcUrl: string;
  publicClient: PublicClient;
  /** Signs as DEV_ACCOUNT (anvil signs for it: eth_sendTransaction). */
  wallet: WalletClient;
  /** viem's description of the node (its chain id). */
  viemChain: ViemChain;
  /** A raw JSON-RPC call, for node controls viem does not type (evm_mine). */
  rpc(method: string, params?: unknown[]): Promise<unknown>;
  /**
   * Several raw JSON-RPC calls in one HTTP request (a JSON-RPC batch); the results in the calls'
   * order. Throws on the first error.
   */
  rpcBatch(calls: readonly { method: string; params: unknown[] }[]): Promise<unknown[]>;
  /** Waits for the receipt (automine on, or a block mined meanwhile). */
  receipt(hash: Hash): Promise<TransactionReceipt>;
  /** Deploys and returns the new contract's address; throws if the deployment reverted. */
  deploy(abi: Abi, bytecode: Hex, args?: readonly unknown[]): Promise<Address>;
  /** Sends a contract call with a fixed gas limit and returns its hash without waiting. */
  call(address: Address, abi: Abi, functionName: string, args: readonly unknown[]): Promise<Hash>;
  /** Sends a contract call and waits for it to be mined (automine must be on). */
  callAndWait(address: Address, abi: Abi, functionName: string, args: readonly unknown[]): Promise<TransactionReceipt>;
  /** Automine off: sent transactions wait in the pool until `mineBlock`. */
  setAutomine(enabled: boolean): Promise<void>;
  mineBlock(): Promise<void>;
}

/** Chain id anvil uses unless told otherwise (the same as anvil.ts's ANVIL_CHAIN_ID). */
const ANVIL_DEFAULT_CHAIN_ID = 31337;

/**
 * viem's description of an anvil node: what viem/chains' `foundry` says, with the node's own id
 * and URL. Defined here rather than imported: `viem/chains` loads every chain viem knows (a
 * cost per process that imports it), and each e2e file and the demo is its own process.
 */
export function anvilChain(chainId: number = ANVIL_DEFAULT_CHAIN_ID, rpcUrl = 'http://127.0.0.1:8545'): ViemChain {
  return defineChain({
    id: chainId,
    name: 'Foundry',
    nativeCurrency: { decimals: 18, name: 'Ether', symbol: 'ETH' },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

/** `chainId` must be the node's (viem checks it before each write); anvil's default unless told. */
export function connectChain(rpcUrl: string, chainId: number = ANVIL_DEFAULT_CHAIN_ID): Chain {
  const chain = anvilChain(chainId, rpcUrl);
  // viem's default polling follows a 12 s block time; anvil mines on send, so poll fast.
  const transport = http(rpcUrl, { retryCount: 0 });
  // Created as the general PublicClient and WalletClient types the Chain interface holds: tsc then
  // does not have to prove the specific client types assignable to them, which costs seconds.
  const publicClient = createPublicClient<Transport, ViemChain | undefined, undefined, undefined, Tokens | undefined>({
    chain,
    transport,
    pollingInterval: 25,
  });
  const wallet = createWalletClient<
    Transport,
    ViemChain | undefined,
    Account | undefined,
    undefined,
    Tokens | undefined
  >({ chain, transport, account: DEV_ACCOUNT, pollingInterval: 25 });

  /**
   * The receipt, once the chain's latest state has the sender's nonce past the transaction too.
   * anvil can answer the receipt while the transaction is still in its pool and the block not yet
   * written: a send from the same account made then was given the same nonce and failed
   * "replacement transaction underpriced" (seen once in a full run).
   */
  async function receipt(hash: Hash): Promise<TransactionReceipt> {
    const mined = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 25, timeout: 10_000 });
    const { nonce } = await publicClient.getTransaction({ hash });
    for (let polls = 0; polls < 400; polls++) {
      const next = await publicClient.getTransactionCount({ address: mined.from, blockTag: 'latest' });
      if (next > nonce) return mined;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`anvil kept ${mined.from}'s nonce at ${nonce} after mining ${hash}`);
  }

  async function deploy(abi: Abi, bytecode: Hex, args: readonly unknown[] = []): Promise<Address> {
    const hash = await wallet.deployContract({ abi, bytecode, args, chain, account: DEV_ACCOUNT });
    const mined = await receipt(hash);
    if (mined.status !== 'success' || !mined.contractAddress) throw new Error(`deployment reverted: ${hash}`);
    return mined.contractAddress;
  }

  /**
   * Sends a contract call signed by anvil for DEV_ACCOUNT. A send anvil refuses as "nonce too low"
   * or "replacement transaction underpriced" is sent again (at most twice): anvil fills the nonce
   * itself and, on a loaded machine, now and then fills one its last block already used (seen in
   * relay.e2e at load average 10-19), or one a transaction still in its pool holds (seen once in
   * relay.e2e). A refused send is not in the pool, so sending again cannot send twice.
   */
  async function call(address: Address, abi: Abi, functionName: string, args: readonly unknown[]): Promise<Hash> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await wallet.writeContract({
          address,
          abi,
          functionName,
          args,
          gas: FIXED_GAS,
          chain,
          account: DEV_ACCOUNT,
        });
      } catch (error) {
        const nonceTooLow =
          error instanceof BaseError && error.walk((e) => e instanceof NonceTooLowError) instanceof NonceTooLowError;
        // The same race while the transaction holding that nonce is still in anvil's pool.
        const nonceTaken =
          error instanceof BaseError &&
          error.walk((e) => /replacement transaction underpriced/i.test((e as Error).message)) !== null;
        if (!(nonceTooLow || nonceTaken) || attempt >= 2) throw error;
        // Let anvil mine what holds the nonce (it mines each transaction as it comes).
        if (nonceTaken) await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  async function callAndWait(address: Address, abi: Abi, functionName: string, args: readonly unknown[]) {
    return receipt(await call(address, abi, functionName, args));
  }

  async function rpc(method: string, params: unknown[] = []): Promise<unknown> {
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const reply = (await response.json()) as { result?: unknown; error?: { message: string } };
    if (reply.error) throw new Error(`${method}: ${reply.error.message}`);
    return reply.result;
  }

  async function rpcBatch(calls: readonly { method: string; params: unknown[] }[]): Promise<unknown[]> {
    if (calls.length === 0) return [];
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(calls.map(({ method, params }, id) => ({ jsonrpc: '2.0', id, method, params }))),
    });
    const replies = (await response.json()) as { id: number; result?: unknown; error?: { message: string } }[];
    const results = new Array<unknown>(calls.length);
    for (const reply of replies) {
      if (reply.error) throw new Error(`${calls[reply.id].method}: ${reply.error.message}`);
      results[reply.id] = reply.result;
    }
    return results;
  }

  async function setAutomine(enabled: boolean): Promise<void> {
    await rpc('evm_setAutomine', [enabled]);
  }

  async function mineBlock(): Promise<void> {
    await rpc('evm_mine');
  }

  return {
    rpcUrl,
    publicClient,
    wallet,
    viemChain: chain,
    rpc,
    rpcBatch,
    receipt,
    deploy,
    call,
    callAndWait,
    setAutomine,
    mineBlock,
  };
}
