// One merchant app per framework adapter, each with the same two routes behind the gate — `POST /paid`
// answers 200 with the verdict read the framework's way and through getGateResult, `POST /fail` answers 500 —
// listening on an ephemeral port, so one behaviour suite can drive all five over real HTTP.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Request as ExpressRequest, type Response as ExpressResponse } from 'express';
import { Hono } from 'hono';
import Fastify from 'fastify';
import { getRequestListener } from '@hono/node-server';
import { NextRequest, NextResponse } from 'next/server';
import { createGate, getGateResult as expressResult, type GateOptions } from '../../middleware';
import { kya, getGateResult as honoResult, type HonoGateOptions, type KyaVariables } from '../../middleware/hono';
import { kyaFastify, getGateResult as fastifyResult, type FastifyGateOptions } from '../../middleware/fastify';
import { createFetchGate, getGateResult as fetchResult } from '../../middleware/fetch';
import { withKya, getGateResult as nextResult } from '../../middleware/next';

export interface MountedShop {
  url: string;
  close(): Promise<void>;
}

export type AdapterName = 'express' | 'hono' | 'fastify' | 'next' | 'fetch';

/** A Node request listener for a fetch-style handler (the promise is @hono/node-server's to settle). */
function nodeListener(...args: Parameters<typeof getRequestListener>): http.RequestListener {
  const listener = getRequestListener(...args);
  return (req, res) => {
    void listener(req, res);
  };
}

async function listen(server: http.Server, closeGate: () => void): Promise<MountedShop> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      closeGate();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export const ADAPTERS: Record<AdapterName, (options: GateOptions) => Promise<MountedShop>> = {
  async express(options) {
    const gate = createGate(options as GateOptions<ExpressRequest, ExpressResponse>);
    const app = express();
    app.post('/paid', gate, (req, res) => void res.json({ framework: req.kya, getter: expressResult(req) }));
    app.post('/fail', gate, (_req, res) => void res.status(500).json({ error: 'handler failed' }));
    return listen(http.createServer(app), () => gate.close());
  },

  async hono(options) {
    const gate = kya(options as HonoGateOptions);
    const app = new Hono<{ Variables: KyaVariables }>();
    app.post('/paid', gate, (c) => c.json({ framework: c.get('kya'), getter: honoResult(c) }));
    app.post('/fail', gate, (c) => c.json({ error: 'handler failed' }, 500));
    return listen(http.createServer(nodeListener(app.fetch)), () => gate.close());
  },

  async fastify(options) {
    const app = Fastify();
    await app.register(async (paid) => {
      await paid.register(kyaFastify, options as FastifyGateOptions);
      paid.post('/paid', async (request) => ({ framework: request.kya, getter: fastifyResult(request) }));
      paid.post('/fail', async (_request, reply) => reply.code(500).send({ error: 'handler failed' }));
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
  },

  async next(options) {
    // App Router route handlers receive a NextRequest and a context with params; both wrapped exactly so.
    const paid = withKya(options, async (req: NextRequest) =>
      NextResponse.json({ framework: nextResult(req), getter: nextResult(req), isNextRequest: req instanceof NextRequest }),
    );
    const fail = withKya(paid.gate, async () => NextResponse.json({ error: 'handler failed' }, { status: 500 }));
    const route = (request: Request) => {
      // Rebuilt from its parts, as Next's own server does (@hono/node-server's request is a lightweight stand-in).
      const req = new NextRequest(request.url, { method: request.method, headers: request.headers });
      const context = { params: Promise.resolve({}) };
      return new URL(req.url).pathname === '/paid' ? paid(req, context) : fail(req, context);
    };
    return listen(http.createServer(nodeListener(route)), () => paid.gate.close());
  },

  async fetch(options) {
    const gate = createFetchGate(options);
    // The bare form: gate(request) → denial or null, then complete() with the handler's answer.
    const handler = async (request: Request): Promise<Response> => {
      const denied = await gate(request);
      if (denied) return denied;
      const response =
        new URL(request.url).pathname === '/paid'
          ? Response.json({ framework: fetchResult(request), getter: fetchResult(request) })
          : Response.json({ error: 'handler failed' }, { status: 500 });
      return gate.complete(request, response);
    };
    return listen(http.createServer(nodeListener(handler)), () => gate.close());
  },
};
