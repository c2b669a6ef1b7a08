// Reads a file named by an option (--spec, --hf-config) within the input limits, without ever
// blocking the process: a FIFO with no writer, /dev/zero or a 10 GB file end in one line, and a
// signal ends the wait.
import { constants, fstatSync, open as openDescriptor } from "node:fs";
import { open, stat, type FileHandle } from "node:fs/promises";
import { Socket } from "node:net";
import { invalidArgument } from "../errors.js";
import { LIMITS } from "../workload/limits.js";
import { formatBytes } from "../units.js";

export interface InputFileOptions {
  /** The most bytes read (default LIMITS.inputFileBytes). */
  maxBytes?: number;
  /** How long a pipe has to deliver everything (default LIMITS.inputPipeSeconds). */
  pipeTimeoutMs?: number;
  /** Aborts the read; it then rejects with the signal's reason. */
  signal?: AbortSignal;
}

function stdinIsSocket(): boolean {
  try {
    return fstatSync(0).isSocket();
  } catch {
    return false; // closed: /dev/stdin's own error says so
  }
}

/** An error about /dev/stdin, as the user typed it: `-`; a terminal there is a forgotten pipe. */
function asStdin(error: unknown, option: string): unknown {
  if (!(error instanceof Error) || !error.message.startsWith(`${option}: `)) return error;
  if (error.message.includes("not a character device")) {
    return invalidArgument(option, "-", `JSON piped or redirected to standard input (\`vramfit … ${option} - < file.json\`), not a terminal or a device`);
  }
  error.message = error.message.replace(/, got "\/dev\/stdin"$/, ', got "-" (standard input)');
  return error;
}

function tooLarge(option: string, path: string, maxBytes: number) {
  return invalidArgument(option, path, `a file of at most ${formatBytes(maxBytes)} (vramfit's input limit)`);
}

/**
 * The text of `path`: a regular file (its size checked before it is read) or a pipe (a FIFO,
 * `/dev/stdin` fed by a pipe, `<(…)`), read without blocking the event loop or a thread, for at
 * most `pipeTimeoutMs`. Anything else (a directory, a character device such as /dev/zero or a
 * terminal, a socket) is refused, as is anything larger than `maxBytes`. `-` is standard input
 * (a pipe or a redirected file), as for most Unix tools.
 */
export async function readInputFile(option: string, path: string, options: InputFileOptions = {}): Promise<string> {
  const maxBytes = options.maxBytes ?? LIMITS.inputFileBytes;
  options.signal?.throwIfAborted();
  if (path === "-") {
    // A socket (what Node's child_process gives a child for its input) cannot be opened again by name: read descriptor 0 itself.
    if (stdinIsSocket()) return readPipe(option, "-", maxBytes, options.pipeTimeoutMs ?? LIMITS.inputPipeSeconds * 1000, options.signal, 0);
    return readInputFile(option, "/dev/stdin", options).catch((error: unknown) => Promise.reject(asStdin(error, option)));
  }
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    throw invalidArgument(option, path, `a readable JSON file (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`);
  }
  options.signal?.throwIfAborted();
  if (info.isFile()) {
    if (info.size > maxBytes) throw tooLarge(option, path, maxBytes);
    return readRegular(option, path, maxBytes);
  }
  if (info.isFIFO()) return readPipe(option, path, maxBytes, options.pipeTimeoutMs ?? LIMITS.inputPipeSeconds * 1000, options.signal);
  const kind = info.isDirectory() ? "a directory" : info.isCharacterDevice() ? "a character device" : info.isBlockDevice() ? "a block device" : info.isSocket() ? "a socket" : "not a file";
  throw invalidArgument(option, path, `a regular file or a pipe, not ${kind}`);
}

/** Reads at most maxBytes + 1 bytes (a file can grow after stat, and /proc files report size 0). */
async function readRegular(option: string, path: string, maxBytes: number): Promise<string> {
  let file: FileHandle;
  try {
    file = await open(path, constants.O_RDONLY);
  } catch (error) {
    throw invalidArgument(option, path, `a readable JSON file (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`);
  }
  try {
    const buffer = Buffer.alloc(Math.min(maxBytes + 1, 1 << 16));
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > maxBytes) throw tooLarge(option, path, maxBytes);
      chunks.push(Buffer.from(buffer.subarray(0, bytesRead)));
    }
    return Buffer.concat(chunks).toString("utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== undefined) throw invalidArgument(option, path, `a readable JSON file (${(error as NodeJS.ErrnoException).code})`);
    throw error;
  } finally {
    await file.close();
  }
}

/**
 * A FIFO opened non-blocking (a blocking open waits for a writer inside a thread that nothing can
 * interrupt, and that even process.exit waits for) and read as a stream: data until the writer
 * closes it, within the time and size limits.
 */
async function readPipe(option: string, path: string, maxBytes: number, timeoutMs: number, signal?: AbortSignal, descriptor?: number): Promise<string> {
  // A bare descriptor, not a FileHandle: the socket owns it and closes it.
  const fd =
    descriptor ??
    (await new Promise<number>((resolve, reject) =>
      openDescriptor(path, constants.O_RDONLY | constants.O_NONBLOCK, (error, opened) =>
        error ? reject(invalidArgument(option, path, `a readable JSON file (${error.code ?? "unreadable"})`)) : resolve(opened),
      ),
    ));
  const socket = new Socket({ fd, readable: true, writable: false });
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const finish = (error: unknown, text?: string) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      socket.destroy(); // closes the descriptor
      if (error === undefined) resolve(text!);
      else reject(error);
    };
    const onAbort = () => finish(signal!.reason);
    const timer = setTimeout(
      () => finish(invalidArgument(option, path, `a pipe that delivers its content within ${timeoutMs / 1000} s (vramfit's input limit); it ${total === 0 ? "sent nothing" : `sent ${formatBytes(total)} and did not end`}`)),
      timeoutMs,
    );
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.on("data", (chunk: Buffer) => {
      total += chunk.length;
      if (total > maxBytes) finish(tooLarge(option, path, maxBytes));
      else chunks.push(chunk);
    });
    socket.on("end", () => finish(undefined, Buffer.concat(chunks).toString("utf8")));
    socket.on("error", (error: NodeJS.ErrnoException) => finish(invalidArgument(option, path, `a readable pipe (${error.code ?? error.message})`)));
  });
}
