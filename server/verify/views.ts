// Server-rendered views of the verify page. Every form works without JavaScript; the only script (nonce'd)
// adds a "sign with browser wallet" button where the browser has an injected wallet.
import { COUNTRIES } from '../screening/countries';
import { html, SafeHtml } from './html';
import type { SessionRow } from '../repositories/sessions';
import type { WalletChallengeRow } from '../repositories/walletChallenges';
import type { OperatorWalletRow } from '../repositories/operators';

export interface PageContext {
  session: SessionRow;
  merchantName: string;
  productName: string | null;
  csrf: string;
  nonce: string;
  providerKind: 'form' | 'hosted';
  supportEmail: string;
  supportSubject: string;
}

export interface FieldErrors {
  [field: string]: string;
}

const STYLE = `
*{box-sizing:border-box}[hidden]{display:none!important}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1b1f24}
main{max-width:40rem;margin:2rem auto;padding:0 1rem}.card{background:#fff;border:1px solid #d8dce1;border-radius:10px;padding:1.5rem;margin-bottom:1.25rem}
h1{font-size:1.4rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:0 0 .75rem}.muted{color:#59636e}.product{font-weight:600}
label{display:block;font-weight:600;margin:.9rem 0 .3rem}input,select,textarea{width:100%;padding:.55rem .6rem;border:1px solid #aab2bb;border-radius:6px;font:inherit}
textarea{font-family:ui-monospace,monospace;font-size:.85rem}button,.button{display:inline-block;margin-top:1rem;padding:.6rem 1.1rem;border:0;border-radius:6px;background:#0b5cd5;color:#fff;font:inherit;font-weight:600;cursor:pointer;text-decoration:none}
button.secondary{background:#e8ebef;color:#1b1f24}.error{color:#b00020;font-size:.9rem;margin:.25rem 0 0}.alert{border-left:4px solid #b00020;background:#fff4f4;padding:.75rem 1rem;border-radius:4px}
.ok{border-left:4px solid #1a7f37;background:#f0fff4;padding:.75rem 1rem;border-radius:4px}.warn{border-left:4px solid #9a6700;background:#fff8e5;padding:.75rem 1rem;border-radius:4px}
.hint{font-size:.9rem;color:#59636e}code{word-break:break-all}ul.wallets{padding-left:1.2rem}footer{font-size:.8rem;color:#59636e;text-align:center;margin:2rem 0}
`;

const WALLET_SCRIPT = `
(function(){
  var msgEl=document.getElementById('challenge-message');if(!msgEl)return;
  function hex(bytes){return Array.prototype.map.call(bytes,function(b){return ('0'+b.toString(16)).slice(-2)}).join('')}
  function fill(net,addr,sig){document.getElementById('wallet-network').value=net;document.getElementById('wallet-address').value=addr;document.getElementById('wallet-signature').value=sig}
  var evm=document.getElementById('sign-evm'),sol=document.getElementById('sign-solana');
  if(window.ethereum&&evm){evm.hidden=false;evm.addEventListener('click',async function(){
    var accounts=await window.ethereum.request({method:'eth_requestAccounts'});
    var data='0x'+hex(new TextEncoder().encode(msgEl.value));
    var sig=await window.ethereum.request({method:'personal_sign',params:[data,accounts[0]]});fill('evm',accounts[0],sig)})}
  if(window.solana&&window.solana.signMessage&&sol){sol.hidden=false;sol.addEventListener('click',async function(){
    var c=await window.solana.connect();var r=await window.solana.signMessage(new TextEncoder().encode(msgEl.value),'utf8');
    fill('solana',c.publicKey.toString(),hex(r.signature||r))})}
})();`;

// Constants written here, never user input: trusted as markup.
const TRUSTED_STYLE = new SafeHtml(STYLE);
const TRUSTED_SCRIPT = new SafeHtml(WALLET_SCRIPT);

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

export function pageHeader(ctx: PageContext): SafeHtml {
  return html`<div class="card">
  <h1>Verify your identity</h1>
  <p class="muted">Requested by <strong id="merchant-name">${ctx.merchantName}</strong></p>
  ${ctx.productName ? html`<p>For: <span class="product" id="product-name">${ctx.productName}</span></p>` : ''}
</div>`;
}

function fieldError(errors: FieldErrors, field: string): SafeHtml | string {
  return errors[field] ? html`<p class="error" id="${field}-error">${errors[field]}</p>` : '';
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
</section>`;
  }
  const country = (values.country ?? '').toUpperCase();
  return html`<section class="card" aria-labelledby="identity-heading">
  <h2 id="identity-heading">Step 1 — Verify your identity</h2>
  ${Object.keys(errors).length ? html`<p class="alert" role="alert">Please correct the highlighted fields.</p>` : ''}
  <form method="post" action="/verify/${ctx.session.id}/identity" novalidate>
    <input type="hidden" name="csrf" value="${ctx.csrf}">
    <label for="full_name">Full legal name</label>
    <input id="full_name" name="full_name" autocomplete="name" required maxlength="200" value="${values.full_name ?? ''}">
    ${fieldError(errors, 'full_name')}
    <label for="date_of_birth">Date of birth</label>
    <input id="date_of_birth" name="date_of_birth" type="date" autocomplete="bday" required value="${values.date_of_birth ?? ''}">
    ${fieldError(errors, 'date_of_birth')}
    <label for="country">Country of residence</label>
    <select id="country" name="country" autocomplete="country" required>
      <option value="">Choose a country…</option>
      ${COUNTRIES.map((c) => html`<option value="${c.code}"${c.code === country ? html` selected` : ''}>${c.name}</option>`)}
    </select>
    ${fieldError(errors, 'country')}
    <label for="document_number">Document number</label>
    <input id="document_number" name="document_number" required maxlength="64" autocomplete="off" value="${values.document_number ?? ''}">
    <p class="hint">Passport, national ID card or driving licence number.</p>
    ${fieldError(errors, 'document_number')}
    <button type="submit">Verify identity</button>
  </form>
</section>`;
}

export function walletSection(ctx: PageContext, challenge: WalletChallengeRow | null, wallets: OperatorWalletRow[], error: string | null, linked: boolean): SafeHtml {
  const list = wallets.length
    ? html`<p>Linked wallets:</p><ul class="wallets" id="linked-wallets">${wallets.map((w) => html`<li><code>${w.address}</code> (${w.network === 'evm' ? 'EVM' : 'Solana'})</li>`)}</ul>`
    : '';
  if (!challenge) return html`<section class="card" aria-labelledby="wallet-heading"><h2 id="wallet-heading">Wallets</h2>${list}</section>`;
  return html`<section class="card" aria-labelledby="wallet-heading">
  <h2 id="wallet-heading">${ctx.session.status === 'pending' ? 'Optional — link a wallet' : 'Step 2 (optional) — link a wallet'}</h2>
  ${linked ? html`<p class="ok" role="status" id="wallet-linked">Wallet linked to your verified identity.</p>` : ''}
  ${error ? html`<p class="alert" role="alert" id="wallet-error">${error}</p>` : ''}
  ${list}
  <p>Sign the message below with your wallet to prove you control it. Payments from a linked wallet count as yours. Signing is free and moves no funds.</p>
  <form method="post" action="/verify/${ctx.session.id}/wallet" novalidate>
    <input type="hidden" name="csrf" value="${ctx.csrf}">
    <input type="hidden" name="challenge_id" value="${challenge.id}">
    <label for="challenge-message">Message to sign</label>
    <textarea id="challenge-message" readonly rows="11">${challenge.message}</textarea>
    <p class="hint">Expires at ${challenge.expires_at.toISOString()}.</p>
    <button type="button" class="secondary" id="sign-evm" hidden>Sign with browser wallet (EVM)</button>
    <button type="button" class="secondary" id="sign-solana" hidden>Sign with browser wallet (Solana)</button>
    <label for="wallet-network">Wallet network</label>
    <select id="wallet-network" name="network">
      <option value="evm">EVM (Ethereum, Base, …)</option>
      <option value="solana">Solana</option>
    </select>
    <label for="wallet-address">Wallet address</label>
    <input id="wallet-address" name="address" autocomplete="off" spellcheck="false" maxlength="64">
    <label for="wallet-signature">Signature</label>
    <textarea id="wallet-signature" name="signature" rows="3" spellcheck="false" maxlength="400"></textarea>
    <button type="submit">Link wallet</button>
  </form>
</section>`;
}

export function statusPanel(ctx: PageContext, failureReason: string | null): SafeHtml {
  switch (ctx.session.status) {
    case 'verified':
    case 'consumed':
      return html`<section class="card"><p class="ok" role="status" id="status-verified"><strong>Your identity is verified.</strong> You can return to your agent now; it receives its credential automatically.</p></section>`;
    case 'failed':
      return html`<section class="card"><p class="alert" role="status" id="status-failed"><strong>We could not verify your identity.</strong> ${failureReason ?? 'The identity check did not succeed.'}</p>
<p>Ask your agent to start a new verification and try again with a clear, valid document.</p></section>`;
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
