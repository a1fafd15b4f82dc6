// What every adapter shares, free of any framework: Web `Headers` as the header map the core reads, and the
// denial as a Web `Response` (after the merchant's onDenied). Wallet capture is GateCore.captureAfter().
import type { GateDenial } from './options';

export type HeaderMap = Record<string, string | string[] | undefined>;

/** Lower-cased header map of a Web `Headers` (what the core reads identity and payment headers from). */
export function headersOf(headers: Headers): HeaderMap {
  const out: HeaderMap = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/** Path and query of a request URL (what the core puts in a SIGN-IN-WITH-X challenge's resource). */
export function pathOf(url: string): string {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
}

/** The gate's default denial as a Web `Response`. */
function denialResponse(denial: GateDenial): Response {
  return new Response(JSON.stringify(denial.body), {
    status: denial.status,
    headers: { ...denial.headers, 'content-type': 'application/json; charset=utf-8' },
  });
}

/** Web-style denial: a `Response` returned by onDenied replaces the default one. */
export async function webDenial<Req, Res>(
  onDenied: ((req: Req, res: Res, denial: GateDenial) => unknown) | undefined,
  req: Req,
  res: Res,
  denial: GateDenial,
): Promise<Response> {
  if (onDenied) {
    const answer = await onDenied(req, res, denial);
    if (answer instanceof Response) return answer;
  }
  return denialResponse(denial);
}

/** Sets a header on a response, copying it first when its headers are immutable (a `fetch()` answer). */
export function withHeader(response: Response, name: string, value: string): Response {
  try {
    response.headers.set(name, value);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    copy.headers.set(name, value);
    return copy;
  }
}
