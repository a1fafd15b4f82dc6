// Request-scoped fields added by our middleware.
import type { Logger } from '../logger';
import type { Principal } from '../services/accounts';
import type { QuotaState } from '../services/quota';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Correlation id, echoed as X-Request-Id. */
      id: string;
      log: Logger;
      /** Set by requireApiKey. */
      principal?: Principal;
      /** Set by meter() for quota-limited accounts. */
      quota?: QuotaState;
    }
  }
}

export {};
