// Server-rendered views of the verify page. Every form works without JavaScript; the only script (nonce'd)
// focuses the first invalid field, copies the wallet message and signs it with an injected browser wallet.
import { COUNTRIES } from '../screening/countries';
import { html, SafeHtml } from './html';
import type { SessionRow } from '../repositories/sessions';
import type { WalletChallengeRow } from '../repositories/walletChallenges';
import type { OperatorWalletRow } from '../repositories/operators';

export interface PageContext {
  session: SessionRow;
  merchantName: string;
  /** The merchant's logo (https), or null for a letter placeholder. */
  logoUrl: string | null;
  productName: string | null;
  csrf: string;
  nonce: string;
  providerKind: 'form' | 'hosted';
  /** The sandbox provider decides by rules, not documents: the page says so before anyone types real data. */
  sandbox: boolean;
  supportEmail: string;
  supportSubject: string;
}

export interface FieldErrors {
  [field: string]: string;
}

export interface RequiredWallet {
  network: 'evm' | 'solana';
  address: string;
}

/**
 * The wallet a merchant's wallet-mode denial named: sessions opened from an assess verify_url carry it in
 * their context (`assess:verify_url:wallet:<network>:<address>`), so the page can ask for that wallet.
 */
function requiredWallet(session: SessionRow): RequiredWallet | null {
  const m = /^assess:verify_url:wallet:(evm|solana):([A-Za-z0-9]{20,64})$/.exec(session.context ?? '');
  return m ? { network: m[1] as 'evm' | 'solana', address: m[2] } : null;
}

function walletLinked(wallet: RequiredWallet, wallets: OperatorWalletRow[]): boolean {
  return wallets.some((w) => w.network === wallet.network && w.address === wallet.address);
}

const FIELD_LABELS: Record<string, string> = {
  full_name: 'Full legal name',
  date_of_birth: 'Date of birth',
  country: 'Country of residence',
  document_number: 'Document number',
};

const STYLE = `
*{box-sizing:border-box}[hidden]{display:none!important}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1b1f24;overflow-wrap:anywhere}
main{max-width:40rem;margin:0 auto;padding:1rem}.card{background:#fff;border:1px solid #d8dce1;border-radius:10px;padding:1.25rem;margin-bottom:1rem}
h1{font-size:1.35rem;margin:0 0 .25rem;line-height:1.3}h2{font-size:1.1rem;margin:0 0 .75rem}.muted{color:#545d68}.product{font-weight:600}
.brand{display:flex;gap:.75rem;align-items:center;margin-bottom:.75rem}.logo{flex:none;width:2.75rem;height:2.75rem;border-radius:8px;object-fit:contain;background:#0b5cd5;color:#fff;display:flex;align-items:center;justify-content:center;font-weight:700;font-size:1.25rem}
.brand p{margin:0}label{display:block;font-weight:600;margin:.9rem 0 .3rem}input,select,textarea{width:100%;padding:.55rem .6rem;border:1px solid #767f8a;border-radius:6px;font:inherit;background:#fff;color:inherit}
[aria-invalid=true]{border:2px solid #b00020}input:focus,select:focus,textarea:focus,button:focus,a:focus{outline:3px solid #0b5cd5;outline-offset:2px}
textarea{font-family:ui-monospace,monospace;font-size:.85rem;white-space:pre-wrap;overflow-wrap:anywhere;resize:vertical}textarea[readonly]{field-sizing:content;background:#f6f8fa}.card>.ok:first-child,.card>.warn:first-child,.card>.alert:first-child{margin-top:0}.card>:last-child{margin-bottom:0}.alert>p:first-child{margin-top:0}.alert+h2{margin-top:1.25rem}
button,.button{display:inline-block;margin-top:1rem;padding:.65rem 1.1rem;border:0;border-radius:6px;background:#0b5cd5;color:#fff;font:inherit;font-weight:600;cursor:pointer;text-decoration:none}
button.secondary{background:#e8ebef;color:#1b1f24;border:1px solid #aab2bb}.error{color:#b00020;font-size:.9rem;margin:.25rem 0 0}
.alert{border-left:4px solid #b00020;background:#fff4f4;padding:.75rem 1rem;border-radius:4px}.alert ul{margin:.25rem 0 0;padding-left:1.2rem}.alert a{color:#8a0019}
.ok{border-left:4px solid #1a7f37;background:#f0fff4;padding:.75rem 1rem;border-radius:4px}.warn{border-left:4px solid #9a6700;background:#fff8e5;padding:.75rem 1rem;border-radius:4px}
.sandbox{background:#5b2a86;color:#fff;padding:.75rem 1rem;border-radius:8px;margin-bottom:1rem}.sandbox strong{display:block}
.hint{font-size:.9rem;color:#545d68;margin:.25rem 0 0}.privacy{font-size:.9rem;color:#454d56;border-top:1px solid #e3e6ea;margin-top:1.25rem;padding-top:.75rem}
code{word-break:break-all;font-size:.9em}ul.wallets{padding-left:1.2rem}.actions{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}.actions button{margin-top:.5rem}
footer{font-size:.8rem;color:#545d68;text-align:center;margin:1.5rem 0}ol.steps{padding-left:1.2rem}
`;

// Progressive enhancement only (every form works without it): focus the first invalid field, a copy button
// for the message, and "Sign with my wallet" when the browser has an injected EVM (EIP-1193) or Solana wallet.
const PAGE_SCRIPT = `
(function(){
  var invalid=document.querySelector('[aria-invalid=true]');if(invalid)invalid.focus();
  var msgEl=document.getElementById('challenge-message');if(!msgEl)return;
  var status=document.getElementById('wallet-script-status');
  function say(t){if(status)status.textContent=t}
  function hex(bytes){return Array.prototype.map.call(bytes,function(b){return ('0'+b.toString(16)).slice(-2)}).join('')}
  var form=document.getElementById('wallet-form');
  function submit(net,addr,sig){document.getElementById('wallet-network').value=net;document.getElementById('wallet-address').value=addr;document.getElementById('wallet-signature').value=sig;say('Signed. Linking your wallet…');if(form.requestSubmit)form.requestSubmit();else form.submit()}
  function failed(e){say('Your wallet did not sign'+(e&&e.message?': '+e.message:'.')+' You can try again, or copy the message and sign it in your wallet app.')}
  var copy=document.getElementById('copy-message');
  if(copy&&navigator.clipboard){copy.hidden=false;copy.addEventListener('click',function(){navigator.clipboard.writeText(msgEl.value).then(function(){say('Message copied.')},function(){msgEl.select();say('Select the message and copy it.')})})}
  var evm=document.getElementById('sign-evm'),sol=document.getElementById('sign-solana');
  if(window.ethereum&&window.ethereum.request&&evm){evm.hidden=false;evm.addEventListener('click',async function(){try{
    var accounts=await window.ethereum.request({method:'eth_requestAccounts'});
    var data='0x'+hex(new TextEncoder().encode(msgEl.value));
    var sig=await window.ethereum.request({method:'personal_sign',params:[data,accounts[0]]});submit('evm',accounts[0],sig)}catch(e){failed(e)}})}
  if(window.solana&&window.solana.signMessage&&sol){sol.hidden=false;sol.addEventListener('click',async function(){try{
    var c=await window.solana.connect();var r=await window.solana.signMessage(new TextEncoder().encode(msgEl.value),'utf8');
    submit('solana',c.publicKey.toString(),hex(r.signature||r))}catch(e){failed(e)}})}
})();`;

// Constants written here, never user input: trusted as markup.
const TRUSTED_STYLE = new SafeHtml(STYLE);
const TRUSTED_SCRIPT = new SafeHtml(PAGE_SCRIPT);

export function layout(ctx: { title: string; nonce: string; refreshSeconds?: number }, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${ctx.refreshSeconds ? html`<meta http-equiv="refresh" content="${ctx.refreshSeconds}">` : ''}
<title>${ctx.title}</title>
<style nonce="${ctx.nonce}">${TRUSTED_STYLE}</style>
</head>
<body>
<main>
${body}
<footer>Secured by kya · identity verification</footer>
</main>
<script nonce="${ctx.nonce}">${TRUSTED_SCRIPT}</script>
</body>
</html>`.value;
}

function sandboxBanner(ctx: PageContext): SafeHtml | string {
  if (!ctx.sandbox) return '';
  return html`<div class="sandbox" role="note" id="sandbox-banner"><strong>Test mode (sandbox)</strong>This is a demonstration: no real identity check takes place and nothing is sent to a verification provider. Do not enter real personal data; made-up details work.</div>`;
}

export function pageHeader(ctx: PageContext): SafeHtml {
  const initial = [...ctx.merchantName.trim()][0]?.toUpperCase() ?? 'K';
  return html`${sandboxBanner(ctx)}<div class="card">
  <div class="brand">${ctx.logoUrl ? html`<img class="logo" id="merchant-logo" src="${ctx.logoUrl}" alt="" width="44" height="44">` : html`<span class="logo" aria-hidden="true">${initial}</span>`}<p><strong id="merchant-name">${ctx.merchantName}</strong><br><span class="muted">asks you to verify your identity</span></p></div>
  <h1>Verify your identity</h1>
  ${ctx.productName ? html`<p>For: <span class="product" id="product-name">${ctx.productName}</span></p>` : ''}
</div>`;
}

function privacyLine(ctx: PageContext): SafeHtml {
  const what =
    ctx.providerKind === 'hosted'
      ? 'Our verification partner checks your identity document and a selfie, and we check your name against sanctions lists.'
      : 'We check your name, date of birth, country and document number, and screen your name against sanctions lists.';
  return html`<p class="privacy" id="privacy">${what} ${ctx.merchantName} sees only the outcome (verified or not, age bracket and country), never your documents or personal details. Questions: <a href="mailto:${ctx.supportEmail}">${ctx.supportEmail}</a>.</p>`;
}

function fieldError(errors: FieldErrors, field: string): SafeHtml | string {
  return errors[field] ? html`<p class="error" id="${field}-error">${errors[field]}</p>` : '';
}

/** aria-invalid + aria-describedby (error first, then the hint) for a field; autofocus on the first invalid one. */
function fieldAria(errors: FieldErrors, field: string, hintId?: string): SafeHtml {
  const described = [errors[field] ? `${field}-error` : null, hintId ?? null].filter(Boolean).join(' ');
  const first = Object.keys(FIELD_LABELS).find((f) => errors[f]) === field;
  return html`${errors[field] ? html` aria-invalid="true"` : ''}${described ? html` aria-describedby="${described}"` : ''}${first ? html` autofocus` : ''}`;
}

function errorSummary(errors: FieldErrors): SafeHtml | string {
  const fields = Object.keys(FIELD_LABELS).filter((f) => errors[f]);
  if (!fields.length) return '';
  return html`<div class="alert" role="alert" id="error-summary"><strong>Please correct ${fields.length === 1 ? 'this field' : `these ${fields.length} fields`}:</strong>
  <ul>${fields.map((f) => html`<li><a href="#${f}">${FIELD_LABELS[f]}</a>: ${errors[f]}</li>`)}</ul></div>`;
}

export function identityForm(ctx: PageContext, values: Partial<Record<string, string>>, errors: FieldErrors): SafeHtml {
  if (ctx.providerKind === 'hosted') {
    const waiting = Boolean(ctx.session.kyc_reference);
    return html`<section class="card" aria-labelledby="identity-heading">
  <h2 id="identity-heading">Step 1 — Verify your identity</h2>
  ${waiting ? html`<p class="warn" role="status">We are waiting for the result of your document check. This page refreshes automatically.</p>` : ''}
  <p>You will photograph an identity document and take a selfie with our verification partner, Stripe Identity.</p>
  <form method="post" action="/verify/${ctx.session.id}/stripe">
    <input type="hidden" name="csrf" value="${ctx.csrf}">
    <button type="submit">${waiting ? 'Start the document check again' : 'Continue to the document check'}</button>
  </form>
  ${privacyLine(ctx)}
</section>`;
  }
  const country = (values.country ?? '').toUpperCase();
  return html`<section class="card" aria-labelledby="identity-heading">
  <h2 id="identity-heading">Step 1 — Verify your identity</h2>
  ${errorSummary(errors)}
  <form method="post" action="/verify/${ctx.session.id}/identity" novalidate>
    <input type="hidden" name="csrf" value="${ctx.csrf}">
    <label for="full_name">Full legal name</label>
    <input id="full_name" name="full_name" autocomplete="name" required maxlength="200" value="${values.full_name ?? ''}"${fieldAria(errors, 'full_name', 'full_name-hint')}>
    <p class="hint" id="full_name-hint">As printed on your identity document.</p>
    ${fieldError(errors, 'full_name')}
    <label for="date_of_birth">Date of birth</label>
    <input id="date_of_birth" name="date_of_birth" type="date" autocomplete="bday" required min="1900-01-01" value="${values.date_of_birth ?? ''}"${fieldAria(errors, 'date_of_birth', 'date_of_birth-hint')}>
    <p class="hint" id="date_of_birth-hint">Day, month and year, as on your document.</p>
    ${fieldError(errors, 'date_of_birth')}
    <label for="country">Country of residence</label>
    <select id="country" name="country" autocomplete="country" required${fieldAria(errors, 'country')}>
      <option value="">Choose a country…</option>
      ${COUNTRIES.map((c) => html`<option value="${c.code}"${c.code === country ? html` selected` : ''}>${c.name}</option>`)}
    </select>
    ${fieldError(errors, 'country')}
    <label for="document_number">Document number</label>
    <input id="document_number" name="document_number" required maxlength="64" autocomplete="off" value="${values.document_number ?? ''}"${fieldAria(errors, 'document_number', 'document_number-hint')}>
    <p class="hint" id="document_number-hint">Passport, national ID card or driving licence number.</p>
    ${fieldError(errors, 'document_number')}
    <button type="submit">Verify identity</button>
  </form>
  ${privacyLine(ctx)}
</section>`;
}

/**
 * The wallet step, shown once the identity step succeeded (or when wallets are already linked): prove control
 * of a wallet by signing a message. Names the wallet a merchant's denial was about, when there is one. Its only
 * caller (render() in router.ts) shows it only when this browser may claim (so the identity step is done) or
 * wallets are linked.
 */
export function walletSection(
  ctx: PageContext,
  challenge: WalletChallengeRow | null,
  wallets: OperatorWalletRow[],
  error: string | null,
  linked: boolean,
): SafeHtml {
  const identityDone = ctx.session.status === 'verified' || ctx.session.status === 'consumed';
  const list = wallets.length
    ? html`<p>Wallets linked to your verified identity:</p><ul class="wallets" id="linked-wallets">${wallets.map((w) => html`<li><code>${w.address}</code> (${w.network === 'evm' ? 'EVM' : 'Solana'})</li>`)}</ul>`
    : '';
  if (!challenge || !identityDone)
    return html`<section class="card" aria-labelledby="wallet-heading"><h2 id="wallet-heading">Your wallets</h2>${list}</section>`;
  const needed = requiredWallet(ctx.session);
  const missing = needed && !walletLinked(needed, wallets) ? needed : null;
  return html`<section class="card" aria-labelledby="wallet-heading">
  <h2 id="wallet-heading">${missing ? 'Step 2 — Prove this wallet is yours' : 'Step 2 (optional) — Prove a wallet is yours'}</h2>
  ${linked ? html`<p class="ok" role="status" id="wallet-linked">Wallet linked to your verified identity.</p>` : ''}
  ${error ? html`<p class="alert" role="alert" id="wallet-error">${error}</p>` : ''}
  ${missing ? html`<p id="wallet-required-detail">Your agent tried to pay from <code>${missing.address}</code>. Link this wallet to prove it is yours.</p>` : html`<p>Linking a wallet lets your agent pay from it: payments from a linked wallet count as yours.</p>`}
  ${list}
  <p>You prove a wallet is yours by signing the message below. Signing is free, sends no transaction, moves no funds and gives no one access to your wallet.</p>
  <form method="post" action="/verify/${ctx.session.id}/wallet" id="wallet-form" novalidate>
    <input type="hidden" name="csrf" value="${ctx.csrf}">
    <input type="hidden" name="challenge_id" value="${challenge.id}">
    <div class="actions">
      <button type="button" id="sign-evm" hidden>Sign with my wallet</button>
      <button type="button" id="sign-solana" hidden>Sign with my Solana wallet</button>
    </div>
    <p class="hint" id="wallet-script-status" role="status" aria-live="polite"></p>
    <p>No wallet in this browser? Copy the message, sign it in your wallet app (look for “Sign message”), then paste the wallet address and the signature.</p>
    <label for="challenge-message">Message to sign</label>
    <textarea id="challenge-message" readonly rows="12" aria-describedby="challenge-expiry">${challenge.message}</textarea>
    <div class="actions"><button type="button" class="secondary" id="copy-message" hidden>Copy message</button></div>
    <p class="hint" id="challenge-expiry">This message can be used until ${challenge.expires_at.toISOString().replace('T', ' ').slice(0, 16)} UTC.</p>
    <label for="wallet-network">Wallet network</label>
    <select id="wallet-network" name="network">
      <option value="evm"${missing?.network === 'solana' ? '' : html` selected`}>EVM (Ethereum, Base, …)</option>
      <option value="solana"${missing?.network === 'solana' ? html` selected` : ''}>Solana</option>
    </select>
    <label for="wallet-address">Wallet address</label>
    <input id="wallet-address" name="address" autocomplete="off" spellcheck="false" maxlength="64" value="${missing?.address ?? ''}">
    <label for="wallet-signature">Signature</label>
    <textarea id="wallet-signature" name="signature" rows="3" spellcheck="false" maxlength="400"></textarea>
    <button type="submit">Link wallet</button>
  </form>
</section>`;
}

export function statusPanel(ctx: PageContext, failureReason: string | null, wallets: OperatorWalletRow[] = []): SafeHtml {
  switch (ctx.session.status) {
    case 'verified':
    case 'consumed': {
      const needed = requiredWallet(ctx.session);
      if (needed && !walletLinked(needed, wallets)) {
        return html`<section class="card"><p class="warn" role="status" id="status-verified"><strong>Your identity is verified.</strong> <span id="wallet-required">One more step: ${ctx.merchantName} refused your agent because it paid from wallet <code>${needed.address}</code>, which is not linked to you yet. Link that wallet below; your agent cannot proceed until you do.</span></p></section>`;
      }
      return html`<section class="card"><p class="ok" role="status" id="status-verified"><strong>Your identity is verified.</strong> <span id="return-to-agent">You can return to your agent now; it receives its credential automatically.</span></p></section>`;
    }
    case 'failed':
      return html`<section class="card"><div class="alert" role="status" id="status-failed"><p><strong>We could not verify your identity.</strong> ${failureReason ?? 'The identity check did not succeed.'}</p>
<p>This usually means the document number could not be matched or read, the document has expired, or the details did not match it. For your privacy the check does not tell us more.</p></div>
<h2>What you can do</h2>
<ol class="steps"><li>Ask your agent to start a new verification: it will give you a new link. Have a valid document at hand and enter the details exactly as printed on it.</li>
<li>If it fails again, email <a href="mailto:${ctx.supportEmail}">${ctx.supportEmail}</a> with the subject “${ctx.supportSubject}” and reference <code>${ctx.session.id}</code>.</li></ol></section>`;
    case 'flagged':
      return html`<section class="card"><p class="warn" role="status" id="status-flagged"><strong>Your verification needs a manual review.</strong> A credential cannot be issued until our compliance team has looked at it.</p>
<p>Please email <a href="mailto:${ctx.supportEmail}">${ctx.supportEmail}</a> with the subject “${ctx.supportSubject}” and reference <code>${ctx.session.id}</code>.</p></section>`;
    default:
      return html``;
  }
}

export function messagePage(nonce: string, title: string, heading: string, text: string, id: string): string {
  return layout({ title, nonce }, html`<section class="card"><h1 id="${id}">${heading}</h1><p>${text}</p></section>`);
}
