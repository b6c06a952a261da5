/**
 * One process for many small test files (scripts/test.ts, SHARED): each test file run in a node
 * process of its own pays a Node start and the import of lib/, and warms the JIT on the same
 * code again. Here the files are imported one after the other into one node:test process; their
 * tests run one at a time, in the order of the files, and the reporter names each failure's file.
 *
 * Sharing is only safe for files that leave the process as they found it, so this process checks it:
 * - after every test (and after each file's import), process.env, the own properties of globalThis,
 *   the process's event listeners and its working directory must be what they were before; a test
 *   that changed one fails, with what changed;
 * - the timers, Date, Date.now, Math.random and performance.now may be replaced during a test (t.mock
 *   restores them once the test's hooks have run) but must be the originals when the next test
 *   starts, or that test fails naming the one before it;
 * - a child process a test started (child_process spawn, exec, execFile, fork) must have exited
 *   once the test's own after hooks have run (1 s of grace for one just signalled), or the next test
 *   fails naming the one before it and the command; the synchronous forms always end before they
 *   return. A file's children share nothing with the other files, so this is all sharing asks of
 *   them. (One started in a file's or a suite's hooks lives as long as the file says;
 *   test/helpers/harness/processes.ts kills those it tracks if the process exits.)
 * - registering module hooks (node:module register/registerHooks) throws: such a file belongs in
 *   a process of its own.
 * The clean-up of test/helpers/harness/processes.ts (kill every tracked child if the process exits or is
 * interrupted) is installed once, before the first file, so its process listeners are part of
 * the state every file must leave as it found it.
 */
import childProcess, { type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import module from 'node:module';
import { relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, afterEach, beforeEach, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { installExitCleanup } from '../test/helpers/harness/processes.ts';

/** What t.mock may replace during a test and restores after its afterEach hooks. */
const MOCKABLE = [
  'setTimeout',
  'clearTimeout',
  'setInterval',
  'clearInterval',
  'setImmediate',
  'clearImmediate',
  'Date',
];

function mockables(): unknown[] {
  return [...MOCKABLE.map((key) => Reflect.get(globalThis, key)), Date.now, Math.random, performance.now];
}

interface Snapshot {
  env: string;
  globals: Map<PropertyKey, unknown[]>;
  listeners: Map<string | symbol, unknown[]>;
  cwd: string;
}

function snapshot(): Snapshot {
  const globals = new Map<PropertyKey, unknown[]>();
  for (const key of Reflect.ownKeys(globalThis)) {
    const d = Reflect.getOwnPropertyDescriptor(globalThis, key);
    if (d && !MOCKABLE.includes(String(key))) globals.set(key, [d.value, d.get, d.set]);
  }
  const listeners = new Map<string | symbol, unknown[]>();
  for (const name of process.eventNames()) listeners.set(name, process.rawListeners(name));
  return {
    env: JSON.stringify(Object.entries(process.env).sort(([a], [b]) => (a < b ? -1 : 1))),
    globals,
    listeners,
    cwd: process.cwd(),
  };
}

function sameList(a: unknown[] | undefined, b: unknown[] | undefined): boolean {
  return a?.length === b?.length && (a ?? []).every((x, i) => Object.is(x, b?.[i]));
}

/**
 * Whether a global changed. Not a change: one of Node's lazy globals (a getter) replaced by the value
 * it loaded on first use, and undici's global dispatcher created by the first fetch (replacing it
 * afterwards is a change).
 */
function globalChanged(key: PropertyKey, before: unknown[] | undefined, after: unknown[] | undefined): boolean {
  if (sameList(before, after)) return false;
  const [, getter] = before ?? [];
  if (typeof getter === 'function' && after && Object.is(getter.call(globalThis), after[0])) return false;
  return !(
    before === undefined &&
    typeof key === 'symbol' &&
    /^undici\.globalDispatcher\.\d+$/.test(key.description ?? '')
  );
}

/** What differs between two snapshots, in words (empty when nothing). */
function changes(before: Snapshot, after: Snapshot): string[] {
  const out: string[] = [];
  if (before.env !== after.env) out.push('process.env');
  for (const key of new Set([...before.globals.keys(), ...after.globals.keys()])) {
    if (globalChanged(key, before.globals.get(key), after.globals.get(key))) out.push(`globalThis.${String(key)}`);
  }
  for (const name of new Set([...before.listeners.keys(), ...after.listeners.keys()])) {
    if (!sameList(before.listeners.get(name), after.listeners.get(name))) {
      out.push(`process '${String(name)}' listeners`);
    }
  }
  if (before.cwd !== after.cwd) out.push('the working directory');
  return out;
}

interface Child {
  child: ChildProcess;
  /** The command line, for the failure message. */
  what: string;
}

/** Those of `list` still running after `graceMs` (a child just signalled gets that long to end). */
async function stillRunning(list: Child[], graceMs: number): Promise<string[]> {
  const running: string[] = [];
  for (const { child, what } of list) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = once(child, 'exit').then(() => true);
    if (!(await Promise.race([exited, delay(graceMs, false, { ref: false })]))) running.push(what);
  }
  return running;
}

/**
 * Starts tracking the children spawned from now on (the asynchronous child_process functions are
 * wrapped); `take()` returns those started since the last call.
 */
function trackChildren(): { take(): Child[] } {
  let started: Child[] = [];
  for (const name of ['spawn', 'exec', 'execFile', 'fork'] as const) {
    const original = childProcess[name] as (...args: unknown[]) => ChildProcess;
    const wrapped = (...args: unknown[]) => {
      const child = original(...args);
      started.push({ child, what: child.spawnargs.join(' ').slice(0, 200) });
      return child;
    };
    Object.defineProperty(childProcess, name, { value: wrapped });
  }
  return {
    take() {
      const list = started;
      started = [];
      return list;
    },
  };
}

function refuse(what: string): () => never {
  return () => {
    throw new Error(`${what} from a test file sharing a process: list it in scripts/test.ts as a file run alone`);
  };
}

/** Imports `files` (absolute paths) into this process, their tests guarded as above. */
export async function runShared(files: string[], root: string): Promise<void> {
  let state: Snapshot | undefined;
  const originals = mockables();
  let previous = '';
  const mocksRestored = () => {
    if (sameList(originals, mockables())) return;
    originals.splice(0, originals.length, ...mockables()); // one failure, not one per test after it
    throw new Error(`the test before ('${previous}') left the timers, Date, Math.random or performance.now replaced`);
  };
  // Registered first: they start node:test's harness, whose own process listeners are then part of
  // the state every file must leave as it found it.
  beforeEach(mocksRestored);
  after(mocksRestored);
  // A test's children are checked once its own after hooks (t.after) have run, which is after the
  // afterEach hooks: at the next test's start, or at the end. Those started between tests (a file's
  // top level, a suite's before hook) are not a test's to stop.
  const children = trackChildren();
  let ofPrevious: Child[] = [];
  const childrenEnded = async () => {
    const running = await stillRunning(ofPrevious, 1_000);
    ofPrevious = [];
    children.take();
    if (running.length > 0) {
      throw new Error(`the test before ('${previous}') left a child process running: ${running.join('; ')}`);
    }
  };
  beforeEach(childrenEnded);
  after(childrenEnded);
  afterEach((t) => {
    previous = t.fullName;
    ofPrevious = children.take();
    if (state === undefined) return;
    const now = snapshot();
    const changed = changes(state, now);
    state = now; // one failure per change, not one per test after it
    if (changed.length > 0) {
      throw new Error(`${t.fullName} changed process-global state in a shared process: ${changed.join(', ')}`);
    }
  });
  for (const name of ['register', 'registerHooks'] as const) {
    Object.defineProperty(module, name, { value: refuse(`module.${name}`) });
  }
  module.syncBuiltinESMExports();
  installExitCleanup();
  state = snapshot();
  for (const file of files) {
    const name = relative(root, file);
    try {
      await import(pathToFileURL(file).href);
    } catch (error) {
      test(`${name} failed to load`, () => {
        throw error;
      });
    }
    // Tests of the files before run meanwhile: a change here is this file's top level or one of theirs.
    const now = snapshot();
    const changed = changes(state, now);
    state = now;
    if (changed.length > 0) {
      test(`${name} (or a test running while it loaded) changed process-global state: ${changed.join(', ')}`, () => {
        throw new Error('a file that does must run in a process of its own (scripts/test.ts)');
      });
    }
  }
}
