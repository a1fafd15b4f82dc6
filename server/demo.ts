// Demo data for the walk-through in docs/quickstart.md (`npm run demo`, embedded mode only): a merchant key, a
// KYC-verified demo operator with two linked wallets whose private keys are public on purpose (derived from
// fixed phrases, so every reader gets the same addresses), an operator credential, a wallet on the OFAC list
// to show a sanctioned payment signer, and a recorded slice of ERC-8004 / x402 data on base so reputation
// has evidence to score. Seeded once per data directory; later runs print the same public values.
import { Wallet, id as keccakText } from 'ethers';
import type { Deps } from './deps';

/** Public demo keys: never fund these wallets. */
export const DEMO_OPERATOR_KEY = keccakText('kya demo operator wallet');
export const DEMO_AGENT_KEY = keccakText('kya demo agent wallet');
/** On OFAC's SDN list (Lazarus Group, ETH): a real sanctioned address, used as a payment signer in the demo. */
export const DEMO_SANCTIONED_SIGNER = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';
const DEMO_OPERATOR_NAME = 'Demo Operator';
const DEMO_MERCHANT_NAME = 'Demo Shop';

export interface DemoValues {
  /** Shown only on the run that created it (stored hashed). */
  apiKey: string | null;
  operatorToken: string | null;
  operatorWallet: { address: string; privateKey: string };
  agentWallet: { address: string; privateKey: string };
  sanctionedSigner: string;
}

function wallets() {
  const operator = new Wallet(DEMO_OPERATOR_KEY);
  const agent = new Wallet(DEMO_AGENT_KEY);
  return {
    operatorWallet: { address: operator.address.toLowerCase(), privateKey: operator.privateKey },
    agentWallet: { address: agent.address.toLowerCase(), privateKey: agent.privateKey },
  };
}

const DAY = 86_400_000;

/** Seeds the demo on first run; returns what the walk-through needs (secrets only when just created). */
export async function seedDemo(deps: Deps): Promise<DemoValues> {
  const { operatorWallet, agentWallet } = wallets();
  const values: DemoValues = { apiKey: null, operatorToken: null, operatorWallet, agentWallet, sanctionedSigner: DEMO_SANCTIONED_SIGNER };
  const existing = (await deps.db('accounts').where({ name: DEMO_OPERATOR_NAME, kind: 'operator' }).first()) as { id: string } | undefined;
  if (existing) return values;

  const { apiKey } = await deps.services.accounts.create({ name: DEMO_MERCHANT_NAME, tier: 'paid', displayName: DEMO_MERCHANT_NAME });
  values.apiKey = apiKey;

  const now = deps.clock.now();
  const operator = await deps.repos.accounts.insert({ account: { name: DEMO_OPERATOR_NAME, kind: 'operator' } });
  await deps.repos.accounts.update({
    id: operator.id,
    patch: {
      kyc_status: 'verified',
      kyc_verified_at: new Date('2025-03-01T10:00:00.000Z'),
      operator_type: 'individual',
      jurisdiction: 'US',
      age_bracket: '21+',
      age_verified: true,
      sanctions_status: 'clear',
      sanctions_checked_at: now,
      verification_level: 'kyc_verified',
    },
  });
  for (const w of [operatorWallet, agentWallet]) {
    await deps.db('operator_wallets').insert({ account_id: operator.id, network: 'evm', address: w.address, claimed_at: now });
  }
  const { token } = await deps.services.credentials.mint({ accountId: operator.id, ttlSeconds: 30 * 86_400, source: 'api' });
  values.operatorToken = token;

  await recordChainSlice(deps, operatorWallet.address, agentWallet.address, now);
  for (const address of [operatorWallet.address, agentWallet.address]) {
    await deps.services.reputation.scorer.score({ address, network: 'evm', chain: 'base', reason: 'demo' });
  }
  return values;
}

/**
 * A recorded slice of base: the operator owns one registered ERC-8004 agent whose agentWallet is the agent
 * wallet, the agent wallet paid three x402 merchants over six days, and two clients left feedback. Written
 * as the indexer would write it (base is not indexed in the demo, so nothing overwrites it).
 */
async function recordChainSlice(deps: Deps, owner: string, agentWallet: string, now: Date): Promise<void> {
  const chain = 'base';
  const repo = deps.repos.reputationChain;
  const registration = {
    type: 'https://eips.ethereum.org/EIPS/eip-8004#registration-v1',
    name: 'Demo Shopping Agent',
    description: 'Buys coffee supplies for its operator.',
    services: [
      { name: 'A2A', endpoint: 'https://agent.demo.invalid/.well-known/agent-card.json' },
      { name: 'MCP', endpoint: 'https://agent.demo.invalid/mcp' },
    ],
    x402Support: true,
    active: true,
  };
  const uri = `data:application/json;base64,${Buffer.from(JSON.stringify(registration)).toString('base64')}`;
  const at = (daysAgo: number) => new Date(now.getTime() - daysAgo * DAY);
  const payees = ['0x1111111111111111111111111111111111111111', '0x2222222222222222222222222222222222222222', '0x3333333333333333333333333333333333333333'];
  await deps.db.transaction(async (trx) => {
    await repo.ensureAgent({ chain, token_id: '0', registry: '0x8004a169fb4a3325136eb29fa0ceb6d2e539a432', owner, now }, trx);
    await repo.registerAgent({ chain, token_id: '0', owner, uri, block: 1000, at: at(10), now }, trx);
    await repo.setMetadata({ chain, token_id: '0', key: 'agentWallet', value: agentWallet, agentWallet, now }, trx);
    await repo.insertPayments(
      {
        rows: [6, 5, 4, 3, 2, 1].map((d, i) => ({
          chain,
          tx_hash: `0x${(i + 1).toString(16).padStart(64, '0')}`,
          log_index: 0,
          token: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
          payer: agentWallet,
          payee: payees[i % payees.length],
          value: '2500000',
          nonce: `0x${(i + 1).toString(16).padStart(64, '0')}`,
          block_number: 1000 + i * 10,
          block_time: at(d),
        })),
      },
      trx,
    );
    const clients = ['0x4444444444444444444444444444444444444444', '0x5555555555555555555555555555555555555555'];
    for (const [i, [client, value, tag]] of (
      [
        [clients[0], '92', 'starred'],
        [clients[1], '88', 'starred'],
        [clients[1], '9990', 'uptime'],
      ] as const
    ).entries()) {
      await repo.insertFeedback(
        {
          chain,
          token_id: '0',
          client_address: client,
          feedback_index: String(i + 1),
          value,
          value_decimals: tag === 'uptime' ? 2 : 0,
          tag1: tag,
          tag2: '',
          endpoint: '',
          feedback_uri: '',
          block_number: 1100 + i,
          tx_hash: `0x${(100 + i).toString(16).padStart(64, '0')}`,
          given_at: at(3 - i),
        },
        trx,
      );
    }
  });
  await repo.saveResolution({ chain, token_id: '0', uri, status: 'ok', registration, error: null, evidence: null, now });
}
