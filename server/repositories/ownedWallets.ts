// Which wallets an operator owns: the one SQL definition, used by assess's lookup and by reputation.
//
// An operator owns the wallets it claimed (signed ownership: `operator_wallets`) and the wallets merchants
// captured paying under one of its credentials that has not been revoked. Revoking a credential (a leaked
// token, a compromised agent) withdraws the captures made under it, because anyone holding the token could
// have produced them; expiry does not, because those payments were made while the credential was valid.

/**
 * FROM fragment: the captures that count toward ownership, as `wc` (wallet_captures, joined to its
 * credential `c`). Select `wc.account_id`, `wc.network`, `wc.wallet_address` and filter in WHERE.
 */
export const COUNTED_CAPTURES_SQL = `wallet_captures wc join credentials c on c.id = wc.credential_id and c.revoked_at is null`;
