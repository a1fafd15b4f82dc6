// Request id (accepted from a trusted upstream when well-formed, else generated), a request-scoped logger and
// one structured access-log line per response. Written by hand instead of pino-http: on the assess hot path
// pino-http's per-request child logger, serializers and redaction cost ~6 % of the server's CPU even though
// 2xx lines are below the default level; here the child logger is only built when something logs.
import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '../logger';

const INCOMING_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * URLs carry capabilities: DELETE /v1/credentials/{id} accepts the opc_ credential itself as the id, and a
 * session id (vs_…) is the verify page's link. Neither reaches the logs; neither does a query string.
 */
export function loggableUrl(url: string | undefined): string {
  return (url ?? '')
    .split('?')[0]
    .replace(/opc_[0-9A-Za-z]+/g, 'opc_[redacted]')
    .replace(/vs_[0-9A-Za-z]+/g, 'vs_[redacted]');
}

export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && INCOMING_ID.test(incoming) ? incoming : crypto.randomUUID();
    req.id = id;
    res.setHeader('X-Request-Id', id);
    let child: Logger | undefined;
    Object.defineProperty(req, 'log', {
      configurable: true,
      // Built on first use; binds the account when authentication has run by then.
      get: () => (child ??= logger.child(req.principal ? { reqId: id, account: req.principal.accountId } : { reqId: id })),
      set: (value: Logger) => {
        child = value;
      },
    });
    const started = performance.now();
    res.once('finish', () => {
      const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'debug';
      if (!logger.isLevelEnabled(level)) return;
      req.log[level](
        {
          req: { method: req.method, url: loggableUrl(req.originalUrl), remoteAddress: req.socket.remoteAddress },
          res: { statusCode: res.statusCode },
          account: req.principal?.accountId,
          responseTime: Math.round(performance.now() - started),
        },
        'request completed',
      );
    });
    next();
  };
}
