// Prometheus gauges for the sanctions lists: age (seconds since as_of) and entries, per list.
import { Gauge, type Registry } from 'prom-client';
import type { ListFreshness } from './freshness';

export function registerSanctionsMetrics(registry: Registry, lists: () => ListFreshness[]): void {
  new Gauge({
    name: 'kya_sanctions_list_age_seconds',
    help: 'Seconds since the sanctions list in use was published (or last confirmed by its source), per list',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of lists()) if (l.age_seconds !== null) this.set({ list: l.list }, l.age_seconds);
    },
  });
  new Gauge({
    name: 'kya_sanctions_list_entries',
    help: 'Entries in the sanctions list in use (addresses for wallets, listed parties for names), per list',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      for (const l of lists()) this.set({ list: l.list }, l.entries);
    },
  });
}
