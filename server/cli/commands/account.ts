// `account …` admin commands: create, list, show, rotate-key, add-key, login-link, cancel, set, endpoint.
import { badRequest } from '../../../shared/errors';
import type { Tier } from '../../../shared/types';
import { intFlag, requireArg, type Command } from '../registry';

export const accountCommands: Command[] = [
  {
    name: 'account create',
    usage: 'account create --name NAME --tier free|paid|enterprise [--quota N] [--rps N] [--display-name X]',
    flags: { name: { type: 'string' }, tier: { type: 'string' }, quota: { type: 'string' }, rps: { type: 'string' }, 'display-name': { type: 'string' } },
    async run({ deps, flags }) {
      const { account, apiKey } = await deps.services.accounts.create({
        name: String(flags.name ?? ''),
        tier: String(flags.tier ?? '') as Tier,
        quota: intFlag(flags.quota, 'quota') ?? undefined,
        rps: intFlag(flags.rps, 'rps') ?? undefined,
        displayName: typeof flags['display-name'] === 'string' ? flags['display-name'] : undefined,
      });
      return { account_id: account.id, api_key: apiKey, account, note: 'The API key is shown once; store it now.' };
    },
  },
  {
    name: 'account list',
    usage: 'account list',
    async run({ deps }) {
      return { accounts: await deps.services.accounts.list() };
    },
  },
  {
    name: 'account show',
    usage: 'account show ID',
    async run(ctx) {
      return ctx.deps.services.accounts.show(requireArg(ctx, 0, 'id'));
    },
  },
  {
    name: 'account rotate-key',
    usage: 'account rotate-key ID',
    async run(ctx) {
      return ctx.deps.services.accounts.rotateKey(requireArg(ctx, 0, 'id'));
    },
  },
  {
    name: 'account login-link',
    usage: 'account login-link ID   (a dashboard sign-in link: 15 minutes, single use)',
    async run(ctx) {
      return ctx.deps.services.dashboard.createLoginLink(requireArg(ctx, 0, 'id'));
    },
  },
  {
    name: 'account add-key',
    usage: 'account add-key ID   (Enterprise only)',
    async run(ctx) {
      return ctx.deps.services.accounts.addKey(requireArg(ctx, 0, 'id'));
    },
  },
  {
    name: 'account cancel',
    usage: 'account cancel ID',
    async run(ctx) {
      return ctx.deps.services.accounts.cancel(requireArg(ctx, 0, 'id'));
    },
  },
  {
    name: 'account set',
    usage: 'account set ID [--display-name X] [--tier T] [--quota N|none] [--rps N|none] [--sanctions-freshness-days N|none]',
    flags: {
      'display-name': { type: 'string' },
      tier: { type: 'string' },
      quota: { type: 'string' },
      rps: { type: 'string' },
      'sanctions-freshness-days': { type: 'string' },
    },
    async run(ctx) {
      const { flags } = ctx;
      return ctx.deps.services.accounts.set(requireArg(ctx, 0, 'id'), {
        displayName: typeof flags['display-name'] === 'string' ? flags['display-name'] : undefined,
        tier: typeof flags.tier === 'string' ? (flags.tier as Tier) : undefined,
        quota: intFlag(flags.quota, 'quota'),
        rps: intFlag(flags.rps, 'rps'),
        sanctionsFreshnessDays: intFlag(flags['sanctions-freshness-days'], 'sanctions-freshness-days'),
      });
    },
  },
  {
    name: 'account endpoint',
    usage: 'account endpoint ID --disable NAME | --enable NAME',
    flags: { disable: { type: 'string' }, enable: { type: 'string' } },
    async run(ctx) {
      const id = requireArg(ctx, 0, 'id');
      const { enable, disable } = ctx.flags;
      if ((enable === undefined) === (disable === undefined)) {
        throw badRequest([{ field: 'endpoint', message: 'give exactly one of --enable NAME or --disable NAME' }]);
      }
      return ctx.deps.services.accounts.setEndpoint(id, String(enable ?? disable), enable !== undefined);
    },
  },
];
