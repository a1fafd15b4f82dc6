// The local admin channel of an embedded server. PGlite serves one process, so while `npm start` holds the data
// directory the admin CLI cannot open the database itself; instead the server listens on 127.0.0.1 (an
// ephemeral port unless ADMIN_CHANNEL_PORT is set) and runs the CLI's commands in-process. Whoever presents the
// random token from DATA_DIR/admin-channel.json (mode 0600, written at start, removed at a clean stop) may run
// any admin command: reading that file takes the same access as reading the database files next to it.
// External (PostgreSQL) mode has no channel: there the CLI opens the database directly, like any instance.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { ApiError, badRequest, type ErrorBody } from '../../shared/errors';
import { safeEqual } from '../crypto';
import type { Deps } from '../deps';
import { processAlive } from '../db/lock';
import { errorBody, runAdmin } from './run';

export const CHANNEL_FILE = 'admin-channel.json';
const RUN_PATH = '/run';
const MAX_BODY_BYTES = 64 * 1024;
const MAX_ARGS = 64;
const MAX_ARG_LENGTH = 4096;

/** What the server writes to DATA_DIR/admin-channel.json. */
export interface ChannelInfo {
  pid: number;
  port: number;
  token: string;
}

export function channelFile(dataDir: string): string {
  return path.join(dataDir, CHANNEL_FILE);
}

export interface AdminChannel {
  port: number;
  /** Stops listening (commands in flight finish first) and removes the token file if it is still ours. */
  close(): Promise<void>;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new ApiError('payload_too_large', `The request body exceeds ${MAX_BODY_BYTES} bytes.`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** The command line and the caller's working directory (relative file arguments are resolved against it). */
function parseRunBody(text: string): { argv: string[]; cwd: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest([{ field: 'body', message: 'must be a JSON object' }]);
  }
  const body = (parsed && typeof parsed === 'object' ? parsed : {}) as Record<string, unknown>;
  const problems = [];
  const argv = body.argv;
  if (!Array.isArray(argv) || argv.length > MAX_ARGS || !argv.every((a) => typeof a === 'string' && a.length <= MAX_ARG_LENGTH)) {
    problems.push({ field: 'argv', message: `must be an array of at most ${MAX_ARGS} strings of at most ${MAX_ARG_LENGTH} characters` });
  }
  if (typeof body.cwd !== 'string' || !path.isAbsolute(body.cwd)) problems.push({ field: 'cwd', message: 'must be an absolute path' });
  if (problems.length) throw badRequest(problems);
  return { argv: argv as string[], cwd: body.cwd as string };
}

function send(res: http.ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
  res.end(text);
}

/** Writes the channel file atomically, readable by the server's user only (0600, whatever the umask). */
function writeChannelFile(file: string, info: ChannelInfo) {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.rmSync(tmp, { force: true });
  fs.writeFileSync(tmp, JSON.stringify(info), { mode: 0o600, flag: 'wx' });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
}

function removeIfOurs(file: string, token: string) {
  try {
    const current = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<ChannelInfo>;
    if (current.token === token) fs.unlinkSync(file);
  } catch {
    /* already gone, or replaced by another server */
  }
}

/** Starts the channel and writes its token file; call once the database is ready. */
export async function startAdminChannel(deps: Deps): Promise<AdminChannel> {
  const token = crypto.randomBytes(32).toString('base64url');
  const expected = `Bearer ${token}`;
  const file = channelFile(deps.config.dataDir);

  const server = http.createServer((req, res) => {
    void (async () => {
      try {
        if (req.method !== 'POST' || req.url !== RUN_PATH) throw new ApiError('not_found', `Only POST ${RUN_PATH} exists here.`);
        const presented = req.headers.authorization;
        if (typeof presented !== 'string' || !safeEqual(presented, expected)) {
          throw new ApiError('unauthorized', `The admin channel refused the token (read it from ${file}).`);
        }
        const { argv, cwd } = parseRunBody(await readBody(req));
        deps.logger.info({ command: argv.slice(0, 2).join(' ') }, 'admin command via the local channel');
        send(res, 200, { result: await runAdmin(argv, deps, cwd) });
      } catch (err) {
        send(res, err instanceof ApiError ? err.status : 500, errorBody(err));
      }
    })();
  });
  // A command such as `reputation sync` may legitimately run for minutes.
  server.requestTimeout = 0;
  server.listen(deps.config.adminChannelPort, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const port = (server.address() as AddressInfo).port;
  writeChannelFile(file, { pid: process.pid, port, token });
  // A crash that still runs exit handlers takes the file with it; after a SIGKILL the CLI sees a dead pid.
  const onExit = () => removeIfOurs(file, token);
  process.once('exit', onExit);
  deps.logger.info({ port, file }, 'local admin channel listening');

  return {
    port,
    close: async () => {
      removeIfOurs(file, token);
      process.removeListener('exit', onExit);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type ChannelOutcome =
  /** No live server answered: open the database directly. */
  { kind: 'unavailable' } | { kind: 'ok'; result: unknown } | { kind: 'error'; body: ErrorBody };

function readChannelFile(file: string): ChannelInfo | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ApiError('forbidden', `Cannot read the admin channel file ${file}: ${(err as Error).message}. Run the CLI as the user that runs the server.`);
  }
  try {
    const info = JSON.parse(text) as Partial<ChannelInfo>;
    if (Number.isInteger(info.pid) && Number.isInteger(info.port) && typeof info.token === 'string') return info as ChannelInfo;
  } catch {
    /* unreadable: treated as absent */
  }
  return null;
}

/**
 * Runs a command through the running server's channel. `unavailable` when there is no channel file, its
 * server process is gone, or nothing listens on its port any more (a stale file after a crash).
 */
export async function callAdminChannel(dataDir: string, argv: string[], cwd = process.cwd()): Promise<ChannelOutcome> {
  const file = channelFile(dataDir);
  const info = readChannelFile(file);
  if (!info || !processAlive(info.pid)) return { kind: 'unavailable' };
  const payload = JSON.stringify({ argv, cwd });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: info.port,
        path: RUN_PATH,
        method: 'POST',
        headers: {
          Authorization: `Bearer ${info.token}`,
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(payload),
          Connection: 'close',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          let body: unknown;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            reject(new Error(`The admin channel on port ${info.port} answered ${res.statusCode} with a body that is not JSON`));
            return;
          }
          if (res.statusCode === 200) resolve({ kind: 'ok', result: (body as { result: unknown }).result });
          else resolve({ kind: 'error', body: body as ErrorBody });
        });
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      // Refused: the port is closed, so the file is stale (its server died without cleaning up).
      if (err.code === 'ECONNREFUSED') resolve({ kind: 'unavailable' });
      else reject(err);
    });
    req.end(payload);
  });
}
