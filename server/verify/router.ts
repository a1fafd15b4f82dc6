// The browser verification page (/verify/:id, DESIGN.md §4): identity step through the configured KYC
// provider, optional wallet claim, and a clear page for every session state. Forms are plain POSTs with CSRF
// tokens; the page carries its own strict CSP (nonce'd style and script, forms only to this origin).
import crypto from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import { ApiError } from '../../shared/errors';
import type { Deps } from '../deps';
import { route } from '../http/asyncRoute';
import { KycInputError, type SandboxForm } from '../kyc/types';
import type { SessionRow } from '../repositories/sessions';
import { WalletClaimError } from '../services/verification';
import { csrfValid, issueCsrf } from './csrf';
import { html } from './html';
import { identityForm, layout, pageHeader, messagePage, statusPanel, walletSection, type FieldErrors, type PageContext } from './views';

function pageHeaders(res: Response, nonce: string) {
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  );
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.type('html');
}

function str(body: unknown, key: string): string {
  const v = (body as Record<string, unknown> | undefined)?.[key];
  return typeof v === 'string' ? v.trim() : '';
}

export function verifyRouter(deps: Deps): Router {
  const router = Router();
  const { sessions, verification, kyc } = deps.services;
  const secure = deps.config.publicBaseUrl.startsWith('https://');
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });

  async function load(req: Request, res: Response, nonce: string): Promise<SessionRow | null> {
    const session = await sessions.current(String(req.params.id));
    if (!session) {
      res.status(404).send(messagePage(nonce, 'Link not valid', 'This verification link is not valid', 'Check that you opened the whole link your agent gave you, or ask it for a new one.', 'not-found'));
      return null;
    }
    if (session.status === 'expired') {
      res.status(410).send(messagePage(nonce, 'Link expired', 'This verification link has expired', 'Verification links are valid for one hour. Ask your agent to start a new verification and open the new link.', 'expired'));
      return null;
    }
    return session;
  }

  async function render(
    req: Request,
    res: Response,
    nonce: string,
    session: SessionRow,
    options: { status?: number; values?: Partial<Record<string, string>>; errors?: FieldErrors; walletError?: string | null } = {},
  ) {
    const ctx: PageContext = {
      session,
      merchantName: await verification.requesterName(session),
      productName: session.product_name,
      csrf: issueCsrf(req, res, deps.config.serverSecret, session.id, secure),
      nonce,
      providerKind: kyc.kind,
      supportEmail: deps.config.supportEmail,
      supportSubject: deps.config.supportSubject,
    };
    const claimOpen = verification.claimWindowOpen(session);
    const [challenge, wallets] = await Promise.all([
      claimOpen ? verification.challengeFor(session) : Promise.resolve(null),
      verification.walletsForSession(session),
    ]);
    const showWallets = claimOpen || wallets.length > 0;
    const body = html`${pageHeader(ctx)}
${session.status === 'pending' ? identityForm(ctx, options.values ?? {}, options.errors ?? {}) : statusPanel(ctx, null)}
${showWallets ? walletSection(ctx, challenge, wallets, options.walletError ?? null, req.query.wallet === 'linked') : ''}`;
    const waitingForProvider = session.status === 'pending' && kyc.kind === 'hosted' && Boolean(session.kyc_reference);
    res.status(options.status ?? 200).send(layout({ title: 'Verify your identity', nonce, refreshSeconds: waitingForProvider ? 5 : undefined }, body));
  }

  /** Common start of every handler: nonce + headers, session loaded (or a 404/410 page sent). */
  function page(handler: (req: Request, res: Response, nonce: string, session: SessionRow) => Promise<void>) {
    return route(async (req, res) => {
      const nonce = crypto.randomBytes(16).toString('base64');
      pageHeaders(res, nonce);
      const session = await load(req, res, nonce);
      if (session) await handler(req, res, nonce, session);
    });
  }

  function forbidden(res: Response, nonce: string) {
    res.status(403).send(messagePage(nonce, 'Form expired', 'This form has expired', 'Reload the verification page and submit the form again.', 'csrf-failed'));
  }

  router.get('/verify/:id', page(async (req, res, nonce, session) => render(req, res, nonce, session)));

  router.post(
    '/verify/:id/identity',
    form,
    page(async (req, res, nonce, session) => {
      if (!csrfValid(req, deps.config.serverSecret, session.id)) return forbidden(res, nonce);
      if (session.status !== 'pending' || kyc.kind !== 'form') return void res.redirect(303, `/verify/${session.id}`);
      const values: SandboxForm = {
        full_name: str(req.body, 'full_name'),
        date_of_birth: str(req.body, 'date_of_birth'),
        country: str(req.body, 'country'),
        document_number: str(req.body, 'document_number'),
      };
      let result;
      try {
        result = kyc.evaluate(values, deps.clock.now());
      } catch (err) {
        if (!(err instanceof KycInputError)) throw err;
        const errors: FieldErrors = Object.fromEntries(err.problems.map((p) => [p.field, p.message]));
        return render(req, res, nonce, session, { status: 400, values: { ...values }, errors });
      }
      await verification.applyKycResult(session.id, result, kyc.name);
      res.redirect(303, `/verify/${session.id}`);
    }),
  );

  router.post(
    '/verify/:id/stripe',
    form,
    page(async (req, res, nonce, session) => {
      if (!csrfValid(req, deps.config.serverSecret, session.id)) return forbidden(res, nonce);
      if (session.status !== 'pending' || kyc.kind !== 'hosted') return void res.redirect(303, `/verify/${session.id}`);
      let started;
      try {
        started = await kyc.start({ sessionId: session.id, returnUrl: sessions.verifyUrl(session.id) });
      } catch (err) {
        req.log.warn({ err: (err as Error).message }, 'starting the hosted identity check failed');
        res.status(503).send(messagePage(nonce, 'Try again', 'The document check is unavailable right now', 'Please wait a minute and reload this page to try again.', 'provider-unavailable'));
        return;
      }
      await sessions.setKycReference(session.id, kyc.name, started.reference);
      res.status(200).send(
        layout(
          { title: 'Continue to the document check', nonce },
          html`<section class="card"><h1>Continue to the document check</h1>
<p>Your document check is ready with Stripe Identity. When you finish, you will come back to this page.</p>
<a class="button" id="continue-to-provider" href="${started.url}" rel="noreferrer">Open the document check</a></section>`,
        ),
      );
    }),
  );

  router.post(
    '/verify/:id/wallet',
    form,
    page(async (req, res, nonce, session) => {
      if (!csrfValid(req, deps.config.serverSecret, session.id)) return forbidden(res, nonce);
      try {
        await verification.claimWallet({
          sessionId: session.id,
          challengeId: str(req.body, 'challenge_id'),
          network: str(req.body, 'network'),
          address: str(req.body, 'address'),
          signature: str(req.body, 'signature'),
        });
      } catch (err) {
        if (!(err instanceof ApiError) || err.status >= 500) throw err;
        const message = err instanceof WalletClaimError ? err.message : (err.details ?? []).map((d) => d.message).join(' ') || err.message;
        const fresh = (await sessions.current(session.id)) ?? session;
        return render(req, res, nonce, fresh, { status: err.status, walletError: message });
      }
      res.redirect(303, `/verify/${session.id}?wallet=linked`);
    }),
  );

  return router;
}
