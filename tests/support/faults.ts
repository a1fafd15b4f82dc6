// Fault injection for the failure-table tests: a private redis-server on a spare port that the test can stop,
// restart, hang (SIGSTOP) and resume; an app listening on an ephemeral port; timed HTTP calls.
import http from 'node:http';
import net from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { freePort } from './net';

export interface PrivateRedis {
  port: number;
  url: string;
  /** SIGKILL: connections drop, nothing listens. */
  stop(): Promise<void>;
  /** A fresh, empty redis-server on the same port. */
  start(): Promise<void>;
  /** SIGSTOP: connections stay open, nothing answers. */
  hang(): void;
  resume(): void;
  close(): Promise<void>;
}

async function accepting(port: number, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await accepting(port);
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGCONT');
    c.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}/0`,
    stop,
    start,
    hang: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    close: stop,
  };
}

export interface Listening {
  url: string;
  close(): Promise<void>;
}

export async function listen(app: Express): Promise<Listening> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface Timed {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a response body; tests assert its shape
  body: any;
  headers: Headers;
  ms: number;
}

export async function timedFetch(url: string, init: RequestInit = {}): Promise<Timed> {
  const started = performance.now();
  const res = await fetch(url, init);
  const text = await res.text();
  const ms = performance.now() - started;
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body, headers: res.headers, ms };
}

/** Prints a measured figure next to its bound so a run shows the margin, not just pass/fail. */
export function report(row: string, figures: Record<string, number | number[]>) {
  const ms = (v: number) => Math.round(v);
  const text = Object.entries(figures)
    .map(([k, v]) => `${k} ${Array.isArray(v) ? v.map(ms).join('/') : ms(v)} ms`)
    .join(', ');
  process.stdout.write(`[failure table] ${row}: ${text}\n`);
}
