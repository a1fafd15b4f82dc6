// MPP payment-handler helpers for merchants: build the `com.<vendor>.payment.mpp` config and serve the
// merchant profile at `/.well-known/ucp`. Uses only node's http types so it works under any framework.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { buildMerchantProfile, type MerchantProfile, type MerchantProfileInput } from '../shared/paymentHandler';

export const UCP_PROFILE_PATH = '/.well-known/ucp';

/**
 * A middleware `(req, res, next)` that answers `GET|HEAD /.well-known/ucp` with the merchant profile and
 * passes every other request on. The profile is built and validated once, here (throws naming a bad field).
 */
export function ucpProfile(input: MerchantProfileInput | { profile: MerchantProfile }) {
  const profile = 'profile' in input ? input.profile : buildMerchantProfile(input);
  const json = JSON.stringify(profile);
  const etag = `"${Buffer.from(json).toString('base64url').slice(-27)}"`;
  return function serveUcpProfile(req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void {
    const path = (req.url ?? '').split('?')[0];
    if (path !== UCP_PROFILE_PATH || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.setHeader('ETag', etag);
    if (req.headers['if-none-match'] === etag) {
      res.statusCode = 304;
      res.end();
      return;
    }
    res.setHeader('Content-Length', Buffer.byteLength(json));
    res.end(req.method === 'HEAD' ? undefined : json);
  };
}
