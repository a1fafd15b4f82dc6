// Which URLs a webhook endpoint may have: https to a public address; outside production also http to
// localhost, for a receiver on a developer's machine. Deliveries re-check the address they connect to (DNS can
// change after this check), so this rule is what a merchant is told when adding one, not the only guard.
import net from 'node:net';
import { isPublicAddress } from '../chain/safeFetch';

/** The canonical URL, or the problem to show beside the field. */
export function checkEndpointUrl(raw: string, production: boolean): { url: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return { problem: 'Enter a full URL, for example https://example.com/kya-webhooks.' };
  }
  if (url.username || url.password) return { problem: 'The URL must not contain a user name or password.' };
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const local = host === 'localhost' || host.endsWith('.localhost') || host === '127.0.0.1' || host === '::1';
  if (url.protocol === 'https:') {
    if (production && (local || (net.isIP(host) && !isPublicAddress(host)))) return { problem: 'The URL must point at a public address.' };
  } else if (!(url.protocol === 'http:' && local && !production)) {
    return { problem: production ? 'The URL must start with https://.' : 'The URL must start with https:// (http:// only for localhost).' };
  }
  if (url.toString().length > 2000) return { problem: 'The URL is too long.' };
  return { url: url.toString() };
}
