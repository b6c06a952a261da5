/**
 * `file://` checkpoint locations (docs/isms.md#checkpoint-storage): read only when the operator
 * set `allowLocalCheckpointSyncers`, at most `maxBytes`, regular files only (no devices, FIFOs
 * or directories, whose reads could block or never end).
 */
import { open } from 'node:fs/promises';
import { DeliveryError } from '../errors.ts';

/** The file's text, undefined when it does not exist; DeliveryError when it is not a regular file or too large. */
export async function readLocalObject(path: string, maxBytes: number): Promise<string | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return undefined;
    throw new DeliveryError('gateway', 'file read failed');
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new DeliveryError('gateway', 'file location is not a regular file');
    if (stat.size > maxBytes) throw new DeliveryError('gateway', `file object larger than ${maxBytes} bytes`);
    const buffer = Buffer.alloc(maxBytes + 1);
    const { bytesRead } = await handle.read(buffer, 0, maxBytes + 1, 0);
    if (bytesRead > maxBytes) throw new DeliveryError('gateway', `file object larger than ${maxBytes} bytes`);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}
