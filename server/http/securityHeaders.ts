// helmet's response headers, computed once: with a static configuration helmet sets the same headers on every
// response, so running it once at start and replaying the result saves its per-request chain of middlewares.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import helmet from 'helmet';

export function staticSecurityHeaders(options?: Parameters<typeof helmet>[0]): RequestHandler {
  const headers: Array<[string, string]> = [];
  const removed: string[] = [];
  const recorder = {
    setHeader(name: string, value: unknown) {
      headers.push([name, String(value)]);
      return recorder;
    },
    removeHeader(name: string) {
      removed.push(name);
    },
    getHeader: () => undefined,
  };
  let ran = false;
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => {
    ran = true;
  });
  // helmet calls next synchronously with a static configuration; anything else is not replayable.
  if (!ran) throw new Error('helmet configuration is not static');
  return (_req, res, next) => {
    for (const [name, value] of headers) res.setHeader(name, value);
    for (const name of removed) res.removeHeader(name);
    next();
  };
}
