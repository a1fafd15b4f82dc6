// Request-scoped fields added by our middleware.
import type { Logger } from '../logger';
import type { Principal } from '../services/accounts';
import type { QuotaState } from '../services/quota';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express's request type is extended by declaration merging into its namespace
  namespace Express {
    interface Request {
      /** Correlation id, echoed as X-Request-Id. */
      id: string;
      log: Logger;
      /** Set by requireApiKey. */
      principal?: Principal;
      /** Set by the auth-failure guard when a key is presented: counts a failed authentication of this client. */
      recordAuthFailure?: () => Promise<void>;
      /** Set by meter() for quota-limited accounts. */
      quota?: QuotaState;
    }
  }
}

export {};
