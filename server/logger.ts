// Structured JSON logs (pino). Secrets in headers and bodies are redacted at the source.
import pino, { Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-poll-secret"]',
  'req.headers["x-operator-token"]',
  'req.headers.cookie',
  'req.headers["payment-signature"]',
  'req.headers["x-payment"]',
  'res.headers["set-cookie"]',
  '*.operator_token',
  '*.poll_secret',
  '*.refresh_token',
  '*.api_key',
];

/** `fd` 2 sends logs to stderr (the admin CLI keeps stdout for its JSON output). */
export function createLogger(level: string, fd: 1 | 2 = 1): Logger {
  return pino(
    { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { service: 'kya', pid: process.pid } },
    pino.destination({ fd, sync: fd === 2 }),
  );
}
