// The "retry with backoff" advice an agent gets with a 503, shared by the server's and the gate's copy so both
// give the same schedule for the same Retry-After; each side names who is unavailable.
import { durationText } from './duration';
import type { AgentInstructions } from './errors';

/** The longest wait the backoff advice lets an agent reach before it keeps retrying at that pace. */
const MAX_BACKOFF_SECONDS = 30;

export interface Unavailable {
  /** What to tell the user after five minutes of failures, e.g. "the identity service is unavailable". */
  giveUp: string;
  /** The user message while retrying. */
  userMessage: string;
}

/** For a 503: wait what Retry-After says, back off, and give up telling the user after a few minutes. */
export function retryWithBackoffAdvice(retryAfterSeconds: number, who: Unavailable): AgentInstructions {
  return {
    action: 'retry_with_backoff',
    steps: [
      `Wait ${durationText(retryAfterSeconds)}, then retry the same request.`,
      `Double the wait after each failure, up to ${durationText(Math.max(MAX_BACKOFF_SECONDS, retryAfterSeconds))}.`,
      `If it still fails after 5 minutes, tell the user ${who.giveUp}.`,
    ],
    user_message: who.userMessage,
  };
}
