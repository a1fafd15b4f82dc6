// The browser verification page (/verify/:id): identity step through the configured KYC
// provider, optional wallet claim, and a clear page for every session state. Forms are plain POSTs with CSRF
// tokens; the page carries its own strict CSP (nonce'd style and script, forms only to this origin).
import express, { Router, type Request, type Response } from 'express';
import type { Deps } from '../deps';
import { route } from '../http/asyncRoute';
import { rejectNulInBody } from '../http/inputGuard';
import { submittedValues } from '../http/forms';
import type { SessionRow } from '../repositories/sessions';
import { claimKeyHash, NOT_THIS_BROWSER, WalletClaimError } from '../services/verification';
import { sessionCopy } from '../services/agentCopy';
import { presentedClaimKey, setClaimCookie } from './claimCookie';
import { csrfValid, issueCsrf } from './csrf';
import { IDENTITY_FIELDS, parseIdentityForm, parseWalletClaimForm } from './forms';
import { pageHeaders } from './errorPage';
import { html } from './html';
import { identityForm, layout, pageHeader, messagePage, statusPanel, walletSection, type FieldErrors, type PageContext } from './views';

/** What every verify-page handler works with, built once per router. */
interface VerifyContext {
  deps: Deps;
  sessions: Deps['services']['sessions'];
  verification: Deps['services']['verification'];
  kyc: Deps['services']['kyc'];
  /** Cookies get `Secure` when the page is served over https. */
  secure: boolean;
}

/** A handler for a page whose session exists and has not expired; `nonce` is the page's CSP nonce. */
type PageHandler = (ctx: VerifyContext, req: Request, res: Response, nonce: string, session: SessionRow) => Promise<void>;

type RenderOptions = { status?: number; values?: Partial<Record<string, string>>; errors?: FieldErrors; walletError?: string | null };

/** Seconds between automatic reloads while the hosted identity check has not reported back. */
const WAITING_REFRESH_SECONDS = 5;

export function verifyRouter(deps: Deps): Router {
  const ctx: VerifyContext = {
    deps,
    sessions: deps.services.sessions,
    verification: deps.services.verification,
    kyc: deps.services.kyc,
    secure: deps.config.publicBaseUrl.startsWith('https://'),
  };
  const form = [express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 }), rejectNulInBody];
  const router = Router();
  router.get(
    '/verify/:id',
    page(ctx, (c, req, res, nonce, session) => render(c, req, res, nonce, session)),
  );
  router.post('/verify/:id/identity', form, page(ctx, submitIdentity));
  router.post('/verify/:id/stripe', form, page(ctx, startHostedCheck));
  router.get('/verify/:id/return', page(ctx, returnFromHostedCheck));
  router.post('/verify/:id/wallet', form, page(ctx, linkWallet));
  return router;
}

/** Common start of every handler: nonce + headers, session loaded (or a 404/410 page sent). */
function page(ctx: VerifyContext, handler: PageHandler) {
  return route(async (req, res) => {
    const nonce = pageHeaders(res);
    const session = await load(ctx, req, res, nonce);
    if (session) await handler(ctx, req, res, nonce, session);
  });
}

async function load(ctx: VerifyContext, req: Request, res: Response, nonce: string): Promise<SessionRow | null> {
  const session = await ctx.sessions.current(String(req.params.id));
  if (!session) {
    res
      .status(404)
      .send(
        messagePage(
          nonce,
          'Link not valid',
          'This verification link is not valid',
          'Check that you opened the whole link your agent gave you, or ask it for a new one.',
          'not-found',
        ),
      );
    return null;
  }
  if (session.status === 'expired') {
    res
      .status(410)
      .send(messagePage(nonce, 'Link expired', 'This verification link has expired', sessionCopy.linkExpired(ctx.deps.config.sessions.ttlSeconds), 'expired'));
    return null;
  }
  return session;
}

/** The page for the session's state: identity form or outcome, and the wallet section when this browser may see it. */
async function render(ctx: VerifyContext, req: Request, res: Response, nonce: string, session: SessionRow, options: RenderOptions = {}): Promise<void> {
  const { deps, verification, kyc } = ctx;
  const requester = await verification.requester(session);
  const view: PageContext = {
    session,
    merchantName: requester.name,
    logoUrl: requester.logoUrl,
    productName: session.product_name,
    csrf: issueCsrf(req, res, deps.config.serverSecret, session.id, ctx.secure),
    nonce,
    providerKind: kyc.kind,
    sandbox: kyc.name === 'sandbox',
    supportEmail: requester.supportEmail ?? deps.config.supportEmail,
    supportSubject: deps.config.supportSubject,
  };
  const claimKey = presentedClaimKey(req);
  const claimOpen = verification.browserMayClaim(session, claimKey);
  const [challenge, wallets] = await Promise.all([
    claimOpen ? verification.challengeFor(session, claimKey) : Promise.resolve(null),
    verification.walletsForSession(session),
  ]);
  const showWallets = claimOpen || wallets.length > 0;
  // Anyone else holding the link (the merchant, another browser) sees the outcome but no way to link a wallet.
  const otherBrowser = !claimOpen && verification.claimWindowOpen(session);
  const body = html`${pageHeader(view)}
${session.status === 'pending' ? identityForm(view, options.values ?? {}, options.errors ?? {}) : statusPanel(view, null, wallets)}
${showWallets ? walletSection(view, challenge, wallets, options.walletError ?? null, req.query.wallet === 'linked') : ''}
${otherBrowser ? html`<section class="card"><p class="hint" id="wallet-other-browser">${NOT_THIS_BROWSER}</p></section>` : ''}`;
  const waitingForProvider = session.status === 'pending' && kyc.kind === 'hosted' && Boolean(session.kyc_reference);
  res
    .status(options.status ?? 200)
    .send(layout({ title: 'Verify your identity', nonce, refreshSeconds: waitingForProvider ? WAITING_REFRESH_SECONDS : undefined }, body));
}

function forbidden(res: Response, nonce: string) {
  res.status(403).send(messagePage(nonce, 'Form expired', 'This form has expired', 'Reload the verification page and submit the form again.', 'csrf-failed'));
}

function claimRefused(res: Response, nonce: string, err: WalletClaimError) {
  const heading = err.reason === 'browser_not_bound' ? 'This browser cannot link a wallet' : 'Wallet linking is closed';
  res.status(403).send(messagePage(nonce, 'Wallet not linked', heading, err.message, 'claim-refused'));
}

/** POST /verify/:id/identity: the sandbox form; a verified identity binds wallet claims to this browser. */
const submitIdentity: PageHandler = async (ctx, req, res, nonce, session) => {
  const { deps, verification, kyc } = ctx;
  if (!csrfValid(req, deps.config.serverSecret, session.id)) return forbidden(res, nonce);
  if (session.status !== 'pending' || kyc.kind !== 'form') return void res.redirect(303, `/verify/${session.id}`);
  const identity = parseIdentityForm(req.body, deps.clock.now());
  if (!identity.ok) return render(ctx, req, res, nonce, session, { status: 400, values: submittedValues(req.body, IDENTITY_FIELDS), errors: identity.errors });
  const result = kyc.evaluate(identity.value);
  const claimKey = verification.newClaimKey();
  const applied = await verification.applyKycResult(session.id, result, kyc.name, undefined, { claimKey });
  if (applied.applied && applied.session.status === 'verified') setClaimCookie(res, applied.session, claimKey, ctx.secure, deps.clock.now());
  res.redirect(303, `/verify/${session.id}`);
};

/** POST /verify/:id/stripe: starts the hosted identity check and links to it. */
const startHostedCheck: PageHandler = async (ctx, req, res, nonce, session) => {
  const { deps, sessions, verification, kyc } = ctx;
  if (!csrfValid(req, deps.config.serverSecret, session.id)) return forbidden(res, nonce);
  if (session.status !== 'pending' || kyc.kind !== 'hosted') return void res.redirect(303, `/verify/${session.id}`);
  // The browser coming back from the hosted check carries this key; redeeming it binds wallet claims to it.
  const returnKey = verification.newClaimKey();
  let started;
  try {
    started = await kyc.start({ sessionId: session.id, returnUrl: `${sessions.verifyUrl(session.id)}/return?key=${returnKey}` });
  } catch (err) {
    req.log.warn({ err: (err as Error).message }, 'starting the hosted identity check failed');
    res
      .status(503)
      .send(
        messagePage(
          nonce,
          'Try again',
          'The document check is unavailable right now',
          'Please wait a minute and reload this page to try again.',
          'provider-unavailable',
        ),
      );
    return;
  }
  await sessions.setKycReference(session.id, kyc.name, started.reference, claimKeyHash(returnKey));
  res.status(200).send(
    layout(
      { title: 'Continue to the document check', nonce },
      html`<section class="card"><h1>Continue to the document check</h1>
<p>Your document check is ready with Stripe Identity. When you finish, you will come back to this page.</p>
<a class="button" id="continue-to-provider" href="${started.url}" rel="noreferrer">Open the document check</a></section>`,
    ),
  );
};

/**
 * GET /verify/:id/return: where the hosted identity check sends the browser back. A page (not a redirect) that
 * then moves on by itself: the SameSite=Strict cookies are sent on that same-site navigation, not on a redirect
 * that continues Stripe's cross-site one.
 */
const returnFromHostedCheck: PageHandler = async (ctx, req, res, nonce, session) => {
  const key = typeof req.query.key === 'string' ? req.query.key : '';
  const claimKey = await ctx.verification.redeemReturnKey(session, key);
  if (claimKey) setClaimCookie(res, session, claimKey, ctx.secure, ctx.deps.clock.now());
  res.setHeader('Refresh', `0; url=/verify/${encodeURIComponent(session.id)}`);
  res.status(200).send(messagePage(nonce, 'Verify your identity', 'Back from the document check', 'Taking you back to your verification page.', 'returned'));
};

/**
 * POST /verify/:id/wallet: a signed challenge links a wallet. A browser that may not claim gets the refusal page
 * before its input is judged (it learns nothing else about the session); bad input and a failed proof re-render
 * the form with the message.
 */
const linkWallet: PageHandler = async (ctx, req, res, nonce, session) => {
  if (!csrfValid(req, ctx.deps.config.serverSecret, session.id)) return forbidden(res, nonce);
  const claimKey = presentedClaimKey(req);
  const refusal = ctx.verification.claimRefusal(session, claimKey);
  if (refusal) return claimRefused(res, nonce, refusal);
  const claim = parseWalletClaimForm(req.body);
  if (!claim.ok) return render(ctx, req, res, nonce, session, { status: 400, walletError: Object.values(claim.errors).join(' ') });
  try {
    await ctx.verification.claimWallet({ sessionId: session.id, claimKey, ...claim.value });
  } catch (err) {
    if (!(err instanceof WalletClaimError)) throw err;
    if (err.reason === 'browser_not_bound' || err.reason === 'session_closed') return claimRefused(res, nonce, err);
    const fresh = (await ctx.sessions.current(session.id)) ?? session;
    return render(ctx, req, res, nonce, fresh, { status: err.status, walletError: err.message });
  }
  res.redirect(303, `/verify/${session.id}?wallet=linked`);
};
