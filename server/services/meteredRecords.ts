// Makes what a metered call records durable before its response: assess audit rows and quota increments go
// through one group commit (a batch every few milliseconds, one statement), and the response waits for its
// batch. A failed batch fails its requests (503), so nothing answered is ever missing from PostgreSQL.
import crypto from 'node:crypto';
import { GroupCommit } from '../db/groupCommit';
import { isPostgresOutage } from '../circuit';
import type { AuditEntry } from '../repositories/audit';
import type { MeteredRecordsRepository, UsageIncrement } from '../repositories/meteredRecords';
import { USAGE_SHARDS } from '../repositories/usage';

export interface CountedCall {
  accountId: string;
  period: string;
  /** Generation of the live counter the call was counted on; null when it was counted without one (outage). */
  gen: string | null;
}

type Item = { audit: AuditEntry; call?: undefined } | { call: CountedCall; audit?: undefined };

/** Audit writes not yet picked up by their request; settled ones are swept once this many accumulate. */
const MAX_UNCLAIMED = 10_000;

export class MeteredRecorder {
  private readonly batcher: GroupCommit<Item, string>;
  /** By request id; a list, because an upstream-supplied X-Request-Id is not guaranteed unique. */
  private readonly auditByRequest = new Map<string, Array<{ written: Promise<void>; settled: boolean }>>();
  private readonly committedListeners: Array<(xid: string, calls: CountedCall[]) => void> = [];
  /** Each batch adds to the next shard; instances start at different ones. */
  private shard = crypto.randomInt(USAGE_SHARDS);

  constructor(
    private readonly repo: MeteredRecordsRepository,
    options: { windowMs: number; maxBatch?: number },
  ) {
    this.batcher = new GroupCommit((items) => this.write(items), {
      windowMs: options.windowMs,
      maxBatch: options.maxBatch ?? 500,
      // A batch that timed out on a hung database: the rows behind it answer 503 now, not after a second timeout.
      shedQueuedOn: isPostgresOutage,
    });
  }

  /** Queues an assess decision's audit row; its request picks the write up with `auditWritten`. */
  recordAudit(entry: AuditEntry): void {
    const record = { written: this.batcher.submit({ audit: entry }).then(() => undefined), settled: false };
    record.written.then(
      () => (record.settled = true),
      () => (record.settled = true),
    );
    if (this.auditByRequest.size >= MAX_UNCLAIMED) {
      for (const [id, rs] of this.auditByRequest) if (rs.every((r) => r.settled)) this.auditByRequest.delete(id);
    }
    const list = this.auditByRequest.get(entry.request_id);
    if (list) list.push(record);
    else this.auditByRequest.set(entry.request_id, [record]);
  }

  /** The audit writes of one request (resolves once committed), or null when it recorded none. */
  auditWritten(requestId: string): Promise<void> | null {
    const list = this.auditByRequest.get(requestId);
    if (!list) return null;
    this.auditByRequest.delete(requestId);
    return list.length === 1 ? list[0].written : Promise.all(list.map((r) => r.written)).then(() => undefined);
  }

  /** Counts one metered call durably; resolves with the committing transaction's id. */
  count(call: CountedCall): Promise<string> {
    return this.batcher.submit({ call });
  }

  /** Called after each committed batch with its counted calls (the live counters reconcile with it). */
  onCommitted(listener: (xid: string, calls: CountedCall[]) => void): void {
    this.committedListeners.push(listener);
  }

  /** Resolves once everything submitted so far is committed or has failed. */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  get pending(): number {
    return this.batcher.pending;
  }

  private async write(items: Item[]): Promise<string> {
    const audit: AuditEntry[] = [];
    const calls: CountedCall[] = [];
    const counts = new Map<string, UsageIncrement>();
    this.shard = (this.shard + 1) % USAGE_SHARDS;
    for (const item of items) {
      if (item.audit) {
        audit.push(item.audit);
        continue;
      }
      calls.push(item.call);
      const k = `${item.call.accountId}|${item.call.period}`;
      const inc = counts.get(k);
      if (inc) inc.count += 1;
      else counts.set(k, { accountId: item.call.accountId, period: item.call.period, shard: this.shard, count: 1 });
    }
    const xid = await this.repo.commit({ audit, usage: [...counts.values()] });
    if (calls.length) for (const listener of this.committedListeners) listener(xid, calls);
    return xid;
  }
}
