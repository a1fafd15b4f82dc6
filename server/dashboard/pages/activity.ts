// Activity: the assess decisions, filtered and paged (newest first), and the same filter as a CSV download.
import type { Request, Router } from 'express';
import type { DashboardKit } from '../kit';
import { parseActivityFilter } from '../forms';
import { activityBody, page, type ActivityQuery } from '../views';

const PAGE_SIZE = 50;
const CSV_MAX_ROWS = 100_000;

function csvCell(value: string): string {
  // Quote everything; neutralise spreadsheet formulas in merchant-controlled text.
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return `"${safe.replace(/"/g, '""')}"`;
}

export function activityPages(router: Router, kit: DashboardKit): void {
  const { deps, authed } = kit;
  const { dashboard } = deps.services;

  function activityFilter(req: Request, accountId: string) {
    const { before, ...q } = parseActivityFilter(req.query);
    const date = (s: string, plusDays = 0) => (s ? new Date(Date.parse(`${s}T00:00:00Z`) + plusDays * 86_400_000) : undefined);
    return {
      q,
      filter: {
        accountId,
        decision: q.decision || undefined,
        reason: q.reason || undefined,
        identityKind: q.kind || undefined,
        from: date(q.from),
        to: date(q.to, 1),
        before: before ?? undefined,
      },
    };
  }

  const queryString = (q: ActivityQuery, extra: Record<string, string> = {}) =>
    new URLSearchParams(Object.entries({ ...q, ...extra }).filter(([, v]) => v !== '')).toString();

  router.get(
    '/dashboard/activity',
    authed(async ({ req, res, accountId, frame }) => {
      const { q, filter } = activityFilter(req, accountId);
      const rows = await dashboard.activity({ ...filter, limit: PAGE_SIZE + 1 });
      const more = rows.length > PAGE_SIZE;
      const shown = rows.slice(0, PAGE_SIZE);
      const next = more ? `/dashboard/activity?${queryString(q, { before: String(shown[shown.length - 1].id) })}` : null;
      const qs = queryString(q);
      const [sessions, credentials] = await Promise.all([dashboard.sessions(accountId), dashboard.credentials(accountId)]);
      res.send(page(await frame('activity'), 'Activity', activityBody(q, shown, next, `/dashboard/activity.csv${qs ? '?' + qs : ''}`, sessions, credentials)));
    }),
  );

  router.get(
    '/dashboard/activity.csv',
    authed(async ({ req, res, accountId }) => {
      const { filter } = activityFilter(req, accountId);
      res.type('text/csv; charset=utf-8');
      res.setHeader('Content-Disposition', 'attachment; filename="kya-activity.csv"');
      res.write('time,decision,reasons,identity_kind,identity_value,request_id,signer_kind,signer_sanctions\r\n');
      let before = filter.before;
      let written = 0;
      while (written < CSV_MAX_ROWS) {
        const rows = await dashboard.activity({ ...filter, before, limit: 2000 });
        if (rows.length === 0) break;
        res.write(
          rows
            .map((r) =>
              [
                r.created_at.toISOString(),
                r.decision,
                r.reasons.join(' '),
                r.identity_kind,
                r.identity_value,
                r.request_id,
                r.signer_kind ?? '',
                r.signer_sanctions ?? '',
              ]
                .map(csvCell)
                .join(','),
            )
            .join('\r\n') + '\r\n',
        );
        written += rows.length;
        before = rows[rows.length - 1].id;
        if (rows.length < 2000) break;
      }
      res.end();
    }),
  );
}
