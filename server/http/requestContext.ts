// Request id (accepted from a trusted upstream when well-formed, else generated) and structured access logs.
import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import pinoHttp from 'pino-http';
import type { Logger } from '../logger';

const INCOMING_ID = /^[A-Za-z0-9._:-]{8,128}$/;

export function requestContext(logger: Logger): RequestHandler {
  return pinoHttp({
    logger,
    genReqId(req, res) {
      const incoming = req.headers['x-request-id'];
      const id = typeof incoming === 'string' && INCOMING_ID.test(incoming) ? incoming : crypto.randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    customLogLevel(_req, res, err) {
      if (err || res.statusCode >= 500) return 'error';
      return res.statusCode >= 400 ? 'info' : 'debug';
    },
    serializers: {
      // DELETE /v1/credentials/{id} accepts the opc_ credential itself as the id: keep it out of the logs.
      req: (req) => ({ id: req.id, method: req.method, url: req.url?.split('?')[0].replace(/opc_[0-9A-Za-z]+/g, 'opc_[redacted]'), remoteAddress: req.remoteAddress }),
      res: (res) => ({ statusCode: res.statusCode }),
    },
  }) as unknown as RequestHandler;
}
